package main

// readOnlyFS: Windows has no read-only remount of a volume under a
// running system to detect here.
func readOnlyFS(string) error { return nil }
