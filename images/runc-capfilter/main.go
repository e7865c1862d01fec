// Command runc-capfilter is an OCI runtime that drops capabilities missing
// from its own bounding set before handing over to runc.
//
// Docker 20.10 grants every known capability under --privileged; on hosts
// whose bounding set lacks one (CAP_SYS_RESOURCE here) runc then fails with
// "unable to apply caps: operation not permitted", and kind always runs
// nodes privileged.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// capNames lists capability names by number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

const realRuntime = "/usr/bin/runc"

func main() {
	args := os.Args[1:]
	if spec := specFile(args); spec != "" {
		if err := filterSpec(spec); err != nil {
			fmt.Fprintf(os.Stderr, "runc-capfilter: %s: %v\n", spec, err)
			os.Exit(1)
		}
	}
	err := syscall.Exec(realRuntime, append([]string{"runc"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-capfilter: exec %s: %v\n", realRuntime, err)
	os.Exit(1)
}

// specFile returns the JSON file carrying capabilities for create/run
// (bundle config.json) or exec (--process file), or "" for other commands.
func specFile(args []string) string {
	cmd, bundle, process := "", ".", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func(name string) (string, bool) {
			if a == name && i+1 < len(args) {
				i++
				return args[i], true
			}
			if strings.HasPrefix(a, name+"=") {
				return a[len(name)+1:], true
			}
			return "", false
		}
		if v, ok := value("--bundle"); ok {
			bundle = v
		} else if v, ok := value("-b"); ok {
			bundle = v
		} else if v, ok := value("--process"); ok {
			process = v
		} else if v, ok := value("-p"); ok && cmd == "exec" {
			process = v
		} else if cmd == "" && !strings.HasPrefix(a, "-") && i > 0 && isValueFlag(args[i-1]) {
			continue
		} else if cmd == "" && !strings.HasPrefix(a, "-") {
			cmd = a
		}
	}
	switch cmd {
	case "create", "run":
		return filepath.Join(bundle, "config.json")
	case "exec":
		return process
	}
	return ""
}

// isValueFlag reports whether a global runc flag takes a separate value.
func isValueFlag(a string) bool {
	switch a {
	case "--root", "--log", "--log-format", "--criu", "--rootless":
		return true
	}
	return false
}

func filterSpec(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	caps := capsObject(doc)
	if caps == nil {
		return nil
	}
	allowed, err := boundingSet()
	if err != nil {
		return err
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if name, ok := c.(string); ok && !allowed[name] && known(name) {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// capsObject finds process.capabilities in a bundle config, or capabilities in a process file.
func capsObject(doc map[string]any) map[string]any {
	if p, ok := doc["process"].(map[string]any); ok {
		doc = p
	}
	c, _ := doc["capabilities"].(map[string]any)
	return c
}

func known(name string) bool {
	for _, n := range capNames {
		if n == name {
			return true
		}
	}
	return false
}

func boundingSet() (map[string]bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return nil, err
			}
			set := map[string]bool{}
			for i, n := range capNames {
				if mask&(1<<uint(i)) != 0 {
					set[n] = true
				}
			}
			return set, nil
		}
	}
	return nil, fmt.Errorf("no CapBnd line")
}
