package launcher

// CgroupsPathOf is the cgroups path Create kept from the spec it made, for tests.
func CgroupsPathOf(c *Container) string { return c.cgroupsPath }
