package security

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// appArmorEnabledFile says whether the kernel's AppArmor module is on.
const appArmorEnabledFile = "/sys/module/apparmor/parameters/enabled"

// HostAppArmor reports whether this kernel enforces AppArmor, as runc and
// the upstream kubelet decide it: the module parameter reads "Y".
func HostAppArmor() bool {
	b, err := os.ReadFile(appArmorEnabledFile)
	return err == nil && bytes.HasPrefix(b, []byte("Y"))
}

// KernelRelease is the running kernel's release ("6.1.0-18-amd64"), or ""
// when it cannot be read.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
