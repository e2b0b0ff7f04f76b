package images

// TEMPORARY shim until K2 merges.
func InitName() string { panic("shim") }
