package models

import (
	"fmt"
	"regexp"
	"strings"
)

// An installation name (and a run id) becomes a directory name on every
// platform Kandev runs on, so it is held to what Linux, macOS and Windows
// all accept the same way.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// windowsDevices are names Windows reserves for devices, with or without an
// extension.
var windowsDevices = map[string]bool{"CON": true, "PRN": true, "AUX": true, "NUL": true,
	"COM0": true, "COM1": true, "COM2": true, "COM3": true, "COM4": true, "COM5": true, "COM6": true, "COM7": true, "COM8": true, "COM9": true,
	"LPT0": true, "LPT1": true, "LPT2": true, "LPT3": true, "LPT4": true, "LPT5": true, "LPT6": true, "LPT7": true, "LPT8": true, "LPT9": true}

// ValidName checks an installation name or run id: 1-64 letters, digits,
// '.', '_' or '-', starting with a letter or digit, not ending with '.'
// (Windows drops it), and not a Windows device name.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("installation name %q is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if strings.HasSuffix(name, ".") {
		return fmt.Errorf("installation name %q is not valid: it must not end with '.' (Windows drops a trailing dot from a directory name)", name)
	}
	base, _, _ := strings.Cut(name, ".")
	if windowsDevices[strings.ToUpper(base)] {
		return fmt.Errorf("installation name %q is not valid: %s is a device name on Windows", name, base)
	}
	return nil
}
