package lake

// SetAfterObjectHook installs a hook run after each data object a publish
// uploads (an error stops the publish there, as a killed process would)
// and returns the function that removes it.
func SetAfterObjectHook(f func(key string) error) (restore func()) {
	old := testHookAfterObject
	testHookAfterObject = f
	return func() { testHookAfterObject = old }
}
