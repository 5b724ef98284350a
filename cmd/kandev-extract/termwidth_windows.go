//go:build windows

package main

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// termWidth is the console's width in columns (80 when unknown).
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		var info windows.ConsoleScreenBufferInfo
		if err := windows.GetConsoleScreenBufferInfo(windows.Handle(f.Fd()), &info); err == nil {
			if cols := int(info.Window.Right-info.Window.Left) + 1; cols > 0 {
				return cols
			}
		}
	}
	return 80
}
