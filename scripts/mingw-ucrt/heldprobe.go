//go:build ignore

// heldprobe is built for windows/amd64 by wine-held.sh and run under Wine
// while another process holds FILE open. Without changing FILE's content it
// reports what Windows (here: Wine) answers to
//
//	open-for-delete: opening FILE for DELETE access, sharing everything: what
//	  deleting FILE or renaming over it needs. A sharing violation means the
//	  holder opened FILE without FILE_SHARE_DELETE.
//	rename-over: os.Rename of a byte-identical copy of FILE over FILE, the call
//	  kandev-extract makes to put a rebuilt warehouse.duckdb in place: the Go
//	  error, its Windows error number, and whether the tool's isHeldOpen
//	  (load/held_windows.go) recognises it.
//
// Each line starts with the step, then ALLOWED, HELD (refused with an error
// isHeldOpen recognises) or OTHER (refused otherwise). A control step first
// checks that share modes are enforced at all: a scratch copy of FILE that
// the probe holds open without FILE_SHARE_DELETE must refuse the DELETE
// open with a sharing violation.
//
// heldprobe.exe -removeall DIR instead makes DIR\a\b.txt and removes DIR
// with os.RemoveAll, then asks NtSetInformationFile for the
// FileDispositionInformationEx class Go's RemoveAll uses (Windows 10 1607+),
// and prints the NTSTATUS: Wine 8 lacks it, which is why runs under Wine 8
// cannot clear their own _staging/ and _build/ directories.
//
//	usage: heldprobe.exe FILE | heldprobe.exe -removeall DIR
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

const (
	fileShareAll = syscall.FILE_SHARE_READ | syscall.FILE_SHARE_WRITE | syscall.FILE_SHARE_DELETE
	accessDelete = 0x00010000
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-removeall" {
		removeAll(os.Args[2])
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: heldprobe FILE | heldprobe -removeall DIR")
		os.Exit(2)
	}
	path := os.Args[1]

	cp := path + ".heldprobe"
	if err := copyFile(path, cp); err != nil {
		fatal(err)
	}
	hold, err := open(cp, syscall.GENERIC_READ, syscall.FILE_SHARE_READ)
	if err != nil {
		fatal(err)
	}
	report("control-open-for-delete (a scratch copy this probe holds without FILE_SHARE_DELETE; expect HELD)", openClose(cp, accessDelete, fileShareAll))
	syscall.CloseHandle(hold)

	report("open-for-delete", openClose(path, accessDelete, fileShareAll))

	err = os.Rename(cp, path)
	if err != nil {
		os.Remove(cp)
	}
	report("rename-over", err)
}

func open(path string, access, share uint32) (syscall.Handle, error) {
	p16, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	return syscall.CreateFile(p16, access, share, nil, syscall.OPEN_EXISTING,
		syscall.FILE_ATTRIBUTE_NORMAL|syscall.FILE_FLAG_BACKUP_SEMANTICS, 0)
}

func openClose(path string, access, share uint32) error {
	h, err := open(path, access, share)
	if err == nil {
		syscall.CloseHandle(h)
	}
	return err
}

func removeAll(dir string) {
	file := filepath.Join(dir, "a", "b.txt")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		fatal(err)
	}
	err := os.RemoveAll(dir)
	fmt.Printf("removeall: %v\n", errText(err))

	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		fatal(err)
	}
	h, err := open(file, accessDelete|syscall.SYNCHRONIZE, fileShareAll)
	if err != nil {
		fatal(err)
	}
	defer syscall.CloseHandle(h)
	// FILE_DISPOSITION_DELETE|FILE_DISPOSITION_POSIX_SEMANTICS, class 64.
	flags := uint32(0x1 | 0x2)
	var iosb [2]uintptr
	st, _, _ := syscall.NewLazyDLL("ntdll.dll").NewProc("NtSetInformationFile").Call(
		uintptr(h), uintptr(unsafe.Pointer(&iosb)), uintptr(unsafe.Pointer(&flags)), 4, 64)
	fmt.Printf("FileDispositionInformationEx: NTSTATUS 0x%08X%s\n", uint32(st), map[uint32]string{
		0: " (STATUS_SUCCESS)", 0xC0000002: " (STATUS_NOT_IMPLEMENTED: Go's RemoveAll does not fall back on it)",
		0xC0000003: " (STATUS_INVALID_INFO_CLASS: Go falls back)", 0xC00000BB: " (STATUS_NOT_SUPPORTED: Go falls back)",
	}[uint32(st)])
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("%v [errno %d]", err, uintptr(errno))
	}
	return err.Error()
}

func report(step string, err error) {
	if err == nil {
		fmt.Printf("%s: ALLOWED\n", step)
		return
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		fmt.Printf("%s: OTHER %v (not a Windows error number)\n", step, err)
		return
	}
	names := map[syscall.Errno]string{5: "ERROR_ACCESS_DENIED", 32: "ERROR_SHARING_VIOLATION", 33: "ERROR_LOCK_VIOLATION"}
	if name, ok := names[errno]; ok {
		fmt.Printf("%s: HELD %v [errno %d %s]\n", step, err, uintptr(errno), name)
		return
	}
	fmt.Printf("%s: OTHER %v [errno %d]\n", step, err, uintptr(errno))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(to)
		return err
	}
	return out.Close()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "heldprobe:", err)
	os.Exit(1)
}
