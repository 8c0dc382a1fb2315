//go:build !linux

package face

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
