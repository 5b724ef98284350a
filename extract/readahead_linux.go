//go:build linux

package extract

import (
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Read-ahead under SQLite, for the bulk reads (liteConn).
//
// SQLite reads a database one page (4 KiB in Kandev's stores) per pread(2).
// On the bench machine a system call costs ~5 µs and copying a page from
// the page cache ~0.5 µs (dd reads the 3.9 GB large store in 5.7 s in 4 KiB
// reads and 0.5 s in 64 KiB ones), and a large run made ~650,000 of them:
// ~17 % of its CPU. A table's pages are mostly in runs: in the message
// pass's scan of task_session_messages, 67 % of the reads ask for the page
// after the previous one, and in the fact's scan of task_session_subagents
// most reads ask for a page 1 to 8 pages on (its indexes' pages lie
// between). So the connections the extractor reads through open the store
// through a VFS of their own, kx-readahead, which is the platform's "unix"
// VFS with one change to the main database file's reads: a read that
// continues the last one (starts at most readGap reads past its end)
// doubles the window it reads, up to readWindow, any other read halves it;
// the pages after it come from the window.
//
// The window is the connection's, and stands only within a lock: it is
// dropped whenever SQLite takes or drops a lock on the file or on the WAL
// (where a read transaction begins and ends), or writes the file (it never
// does: the connections are read-only). Within a read
// transaction SQLite keeps the pages it read in its own cache too, because
// no writer may change them: the window holds nothing SQLite's cache could
// not. Locking, the WAL and its shared memory are the unix VFS's own.

// readWindow is the most a read past the window reads.
const readWindow = 128 << 10

// readGap is how far (in reads of the last size) past the last read a
// read may start and still count as continuing it: a table's pages are
// often a few apart, its indexes' pages between them.
const readGap = 8

var (
	raOnce    sync.Once
	raVFS     uintptr // the kx-readahead sqlite3_vfs; 0 when not registered
	raOrigVFS uintptr // the unix VFS it wraps
	raMu      sync.Mutex
	raMethods = map[uintptr]uintptr{} // the unix VFS's io methods → ours
	raFiles   sync.Map                // sqlite3_file → *raFile
)

// raFile is an open main database file's window.
type raFile struct {
	orig *sqlite3.Tsqlite3_io_methods
	buf  []byte
	off  int64 // the file offset of buf[0]
	n    int   // valid bytes in buf (0: no window)
	end  int64 // where the last read from the file ended
	// pages is the next window, in reads of the last size.
	pages  int
	size   int64 // the file's size, read at the first window of a lock (-1: not read)
	served int64 // reads served from a window (tests)
}

// readAheadVFS is the name of the VFS to open the store with ("" for the
// default one: the VFS could not be registered).
func readAheadVFS() string {
	raOnce.Do(registerReadAhead)
	if raVFS == 0 {
		return ""
	}
	return "kx-readahead"
}

func registerReadAhead() {
	tls := libc.NewTLS()
	defer tls.Close()
	unix, err := libc.CString("unix")
	if err != nil {
		return
	}
	orig := sqlite3.Xsqlite3_vfs_find(tls, unix)
	if orig == 0 {
		return
	}
	// The VFS and its name live as long as the process: SQLite keeps them
	// in its list.
	name, err := libc.CString("kx-readahead")
	if err != nil {
		return
	}
	v := libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
	if v == 0 {
		return
	}
	vfs := (*sqlite3.Tsqlite3_vfs)(cPointer(v))
	*vfs = *(*sqlite3.Tsqlite3_vfs)(cPointer(orig))
	vfs.FpNext, vfs.FzName = 0, name
	*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&vfs.FxOpen)) = raOpen
	raOrigVFS = orig
	if sqlite3.Xsqlite3_vfs_register(tls, v, 0) != sqlite3.SQLITE_OK {
		return
	}
	raVFS = v
}

// raOpen opens a file through the unix VFS, and gives a main database file
// the io methods that read ahead.
func raOpen(tls *libc.TLS, _ uintptr, zName uintptr, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	open := (*sqlite3.Tsqlite3_vfs)(cPointer(raOrigVFS)).FxOpen
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&open)))(tls, raOrigVFS, zName, pFile, flags, pOutFlags)
	f := (*sqlite3.Tsqlite3_file)(cPointer(pFile))
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_MAIN_DB == 0 || f.FpMethods == 0 {
		return rc
	}
	ours := raMethodsFor(tls, f.FpMethods)
	if ours == 0 {
		return rc
	}
	raFiles.Store(pFile, &raFile{orig: (*sqlite3.Tsqlite3_io_methods)(cPointer(f.FpMethods)), buf: make([]byte, readWindow), end: -1, pages: 1, size: -1})
	f.FpMethods = ours
	return rc
}

// raMethodsFor is the unix VFS's io methods orig with the read, and the
// calls that end a window, replaced (made once per orig).
func raMethodsFor(tls *libc.TLS, orig uintptr) uintptr {
	raMu.Lock()
	defer raMu.Unlock()
	if m, ok := raMethods[orig]; ok {
		return m
	}
	m := libc.Xcalloc(tls, 1, libc.Tsize_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if m == 0 {
		return 0
	}
	io := (*sqlite3.Tsqlite3_io_methods)(cPointer(m))
	*io = *(*sqlite3.Tsqlite3_io_methods)(cPointer(orig))
	*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&io.FxClose)) = raClose
	*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&io.FxRead)) = raRead
	*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&io.FxWrite)) = raWrite
	*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&io.FxTruncate)) = raTruncate
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&io.FxLock)) = raLock
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&io.FxUnlock)) = raUnlock
	if io.FiVersion >= 2 && io.FxShmLock != 0 {
		*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&io.FxShmLock)) = raShmLock
	}
	raMethods[orig] = m
	return m
}

func raGet(pFile uintptr) *raFile {
	f, _ := raFiles.Load(pFile)
	return f.(*raFile)
}

// drop ends the window (and the size read with it).
func (f *raFile) drop() { f.n, f.end, f.pages, f.size = 0, -1, 1, -1 }

func raRead(tls *libc.TLS, pFile uintptr, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f := raGet(pFile)
	read := f.orig.FxRead
	origRead := *(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&read))
	n := int(iAmt)
	if iOfst >= f.off && iOfst+int64(n) <= f.off+int64(f.n) {
		i := int(iOfst - f.off)
		copy(unsafe.Slice((*byte)(cPointer(zBuf)), n), f.buf[i:i+n])
		f.served++
		return sqlite3.SQLITE_OK
	}
	// A miss. Reads that continue the last one widen the next window (up
	// to readWindow), others narrow it: a table read in runs of pages is
	// read in few calls, one read here and there costs no bytes more.
	if f.end >= 0 && iOfst >= f.end && iOfst <= f.end+readGap*int64(n) {
		f.pages = min(2*f.pages, readWindow/max(n, 1))
	} else {
		f.pages = max(f.pages/2, 1)
	}
	f.n, f.end = 0, iOfst+int64(n)
	if f.pages <= 1 || n <= 0 || n > readWindow/2 || iOfst < 0 {
		f.pages = max(f.pages, 1)
		return origRead(tls, pFile, zBuf, iAmt, iOfst)
	}
	if f.size < 0 {
		size := f.orig.FxFileSize
		out := tls.Alloc(8)
		rc := (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&size)))(tls, pFile, out)
		f.size = *(*int64)(cPointer(out))
		tls.Free(8)
		if rc != sqlite3.SQLITE_OK {
			f.size = -1
			return origRead(tls, pFile, zBuf, iAmt, iOfst)
		}
	}
	w := min(int64(f.pages*n), f.size-iOfst)
	if w <= int64(n) {
		// At the end as it was measured: SQLite's own read.
		return origRead(tls, pFile, zBuf, iAmt, iOfst)
	}
	if rc := origRead(tls, pFile, uintptr(unsafe.Pointer(&f.buf[0])), int32(w), iOfst); rc != sqlite3.SQLITE_OK {
		// A short read (the file shrank) or an error: SQLite's own read
		// says which.
		return origRead(tls, pFile, zBuf, iAmt, iOfst)
	}
	f.off, f.n, f.end = iOfst, int(w), iOfst+w
	copy(unsafe.Slice((*byte)(cPointer(zBuf)), n), f.buf[:n])
	return sqlite3.SQLITE_OK
}

func raClose(tls *libc.TLS, pFile uintptr) int32 {
	f := raGet(pFile)
	raFiles.Delete(pFile)
	fn := f.orig.FxClose
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&fn)))(tls, pFile)
}

func raWrite(tls *libc.TLS, pFile uintptr, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f := raGet(pFile)
	f.drop()
	fn := f.orig.FxWrite
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&fn)))(tls, pFile, zBuf, iAmt, iOfst)
}

func raTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	f := raGet(pFile)
	f.drop()
	fn := f.orig.FxTruncate
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&fn)))(tls, pFile, size)
}

func raLock(tls *libc.TLS, pFile uintptr, eLock int32) int32 {
	f := raGet(pFile)
	f.drop()
	fn := f.orig.FxLock
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&fn)))(tls, pFile, eLock)
}

func raUnlock(tls *libc.TLS, pFile uintptr, eLock int32) int32 {
	f := raGet(pFile)
	f.drop()
	fn := f.orig.FxUnlock
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&fn)))(tls, pFile, eLock)
}

// raShmLock: in WAL mode the lock on the file itself is held from one
// transaction to the next; a read transaction begins and ends with the
// WAL's locks instead.
func raShmLock(tls *libc.TLS, pFile uintptr, offset, n, flags int32) int32 {
	f := raGet(pFile)
	f.drop()
	fn := f.orig.FxShmLock
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&fn)))(tls, pFile, offset, n, flags)
}
