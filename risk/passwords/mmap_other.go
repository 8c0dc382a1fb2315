//go:build !unix

package passwords

import (
	"errors"
	"os"
)

// mapFile is only implemented with mmap (unix); elsewhere a corpus larger
// than the embedded default is refused rather than read into memory.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("passwords: memory-mapped corpus files need a unix system")
}

func inode(os.FileInfo) uint64 { return 0 }
