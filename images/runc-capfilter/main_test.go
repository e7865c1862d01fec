package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestSpecFileFindsTheBundleConfigOfCreate(t *testing.T) {
	args := []string{"--root", "/run/runc", "--log", "/x/log.json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}
	if got := specFile(args); got != "/b/config.json" {
		t.Fatalf("got %q", got)
	}
}

func TestSpecFileFindsTheProcessFileOfExec(t *testing.T) {
	args := []string{"--root", "/run/runc", "exec", "--process", "/tmp/proc.json", "--detach", "id"}
	if got := specFile(args); got != "/tmp/proc.json" {
		t.Fatalf("got %q", got)
	}
}

func TestSpecFileIgnoresOtherCommands(t *testing.T) {
	for _, args := range [][]string{{"--root", "/run/runc", "state", "id"}, {"delete", "--force", "id"}, {"--version"}} {
		if got := specFile(args); got != "" {
			t.Fatalf("%v: got %q", args, got)
		}
	}
}

func TestFilterSpecDropsCapabilitiesOutsideTheBoundingSet(t *testing.T) {
	allowed, err := boundingSet()
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	for _, n := range capNames {
		if !allowed[n] {
			missing = n
			break
		}
	}
	if missing == "" {
		t.Skip("this host's bounding set is full; nothing to drop")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	doc := map[string]any{"process": map[string]any{"capabilities": map[string]any{
		"bounding": []string{"CAP_CHOWN", missing}, "effective": []string{missing},
	}}, "root": map[string]any{"path": "rootfs"}}
	raw, _ := json.Marshal(doc)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := filterSpec(path); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(path)
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	caps := got["process"].(map[string]any)["capabilities"].(map[string]any)
	if b := caps["bounding"].([]any); len(b) != 1 || b[0] != "CAP_CHOWN" {
		t.Fatalf("bounding = %v", b)
	}
	if e := caps["effective"].([]any); len(e) != 0 {
		t.Fatalf("effective = %v", e)
	}
	if got["root"].(map[string]any)["path"] != "rootfs" {
		t.Fatal("other fields must survive")
	}
}
