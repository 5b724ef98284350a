package sqlitedrv

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The handle of a modernc.org/sqlite database/sql connection, for the WAL
// snapshot calls a fork is pinned with (extract's fork.go).

// errNoHandle: the driver connection is not the modernc.org/sqlite
// connection this code knows (its layout changed): no WAL fork.
var errNoHandle = errors.New("the driver's connection handle is not accessible")

// sqliteHandle returns the sqlite3* handle and the TLS of a
// modernc.org/sqlite driver connection (unexported fields db and tls of
// its conn type), read through reflection.
func sqliteHandle(dc any) (uintptr, *libc.TLS, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, nil, errNoHandle
	}
	e := v.Elem()
	db, tls := e.FieldByName("db"), e.FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || !tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || !db.CanAddr() {
		return 0, nil, errNoHandle
	}
	h := *(*uintptr)(unsafe.Pointer(db.UnsafeAddr()))
	t := *(**libc.TLS)(unsafe.Pointer(tls.UnsafeAddr()))
	if h == 0 || t == nil {
		return 0, nil, errNoHandle
	}
	return h, t, nil
}

// withMain calls fn with "main" as a C string and an 8-byte out pointer,
// allocated on the connection's TLS stack (libc memory, outside the Go
// heap; freed in reverse order).
func withMain(tls *libc.TLS, fn func(zMain, out uintptr) int32) (uintptr, int32) {
	zMain := tls.Alloc(8)
	out := tls.Alloc(8)
	copy(unsafe.Slice((*byte)(cPointer(zMain)), 5), "main\x00")
	*(*uintptr)(cPointer(out)) = 0
	rc := fn(zMain, out)
	p := *(*uintptr)(cPointer(out))
	tls.Free(8)
	tls.Free(8)
	return p, rc
}

// cPointer is the pointer to libc memory at address p (modernc's C
// memory is not in the Go heap and never moves).
func cPointer(p uintptr) unsafe.Pointer { return unsafe.Add(nil, p) }

// Snapshot is an sqlite3_snapshot (SQLite's, in libc memory): the state
// a WAL-mode read transaction reads. Free frees it.
type Snapshot struct{ p uintptr }

// Free frees the snapshot.
func (s Snapshot) Free() {
	tls := libc.NewTLS()
	sqlite3.Xsqlite3_snapshot_free(tls, s.p)
	tls.Close()
}

// Same says whether a and b are the same snapshot (sqlite3_snapshot_cmp,
// both ways).
func Same(a, b Snapshot) bool {
	tls := libc.NewTLS()
	defer tls.Close()
	return sqlite3.Xsqlite3_snapshot_cmp(tls, a.p, b.p) == 0 && sqlite3.Xsqlite3_snapshot_cmp(tls, b.p, a.p) == 0
}

// DriverSnapshot is the snapshot of the read transaction of dc, a
// modernc.org/sqlite driver connection (from database/sql's Conn.Raw), in
// WAL mode (sqlite3_snapshot_get: modernc's SQLite is compiled with
// SQLITE_ENABLE_SNAPSHOT; the driver does not expose the call, so it is
// made on the connection's handle).
func DriverSnapshot(dc any) (Snapshot, error) {
	db, tls, err := sqliteHandle(dc)
	if err != nil {
		return Snapshot{}, err
	}
	p, rc := withMain(tls, func(zMain, out uintptr) int32 { return sqlite3.Xsqlite3_snapshot_get(tls, db, zMain, out) })
	if rc != sqlite3.SQLITE_OK || p == 0 {
		return Snapshot{}, fmt.Errorf("sqlite3_snapshot_get: result code %d", rc)
	}
	return Snapshot{p}, nil
}

// OpenDriverSnapshot moves the read transaction of dc (as DriverSnapshot)
// to snap (sqlite3_snapshot_open; the transaction's first read must have
// opened the WAL).
func OpenDriverSnapshot(dc any, snap Snapshot) error {
	db, tls, err := sqliteHandle(dc)
	if err != nil {
		return err
	}
	_, rc := withMain(tls, func(zMain, _ uintptr) int32 { return sqlite3.Xsqlite3_snapshot_open(tls, db, zMain, snap.p) })
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_snapshot_open: result code %d", rc)
	}
	return nil
}
