package settings

// ReadBack returns the run's providers.json from the copy, read the way MergeAllowed reads it:
// nothing through a symlink, no FIFO, socket or device, at most 4 MiB. The caller learns the
// credentials in it (a token the run refreshed is a secret of the call, whether or not it is
// merged back). The bytes are the run's: hostile input in a container's case.
func (c *Copy) ReadBack() ([]byte, error) { return c.read() }

// ReadBack is c.ReadBack(), and Discard c.Close(): the Store's view of a copy, for consumers that
// take the Store through an interface.
func (s *Store) ReadBack(c *Copy) ([]byte, error) { return c.ReadBack() }

// Discard removes a copy (Copy.Close).
func (s *Store) Discard(c *Copy) error { return c.Close() }
