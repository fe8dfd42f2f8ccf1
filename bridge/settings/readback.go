package settings

// ReadBack returns the run's providers.json from the copy, read the way MergeAllowed reads it:
// nothing through a symlink, no FIFO, socket or device, at most 4 MiB. The caller learns the
// credentials in it (a token the run refreshed is a secret of the call, whether or not it is
// merged back). The bytes are the run's: hostile input in a container's case.
func (c *Copy) ReadBack() ([]byte, error) { return c.read() }
