package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a tiny static Go program (CGO_ENABLED=0), as `make image` builds the real
// one, and returns its path.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os/user\"\n\nfunc main() { _, _ = user.Current() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module stand/in\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the stand-in binary: %v\n%s", err, b)
	}
	return out
}

// layerFiles lists the image's files (path → mode and owner) and returns the file contents.
func layerFiles(t *testing.T, img v1.Image) (map[string]string, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	meta, data := map[string]string{}, map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			meta["/"+strings.TrimSuffix(h.Name, "/")] = os.FileMode(h.Mode).String() + " " + strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid)
			b, _ := io.ReadAll(tr)
			data["/"+strings.TrimSuffix(h.Name, "/")] = b
		}
		rc.Close()
	}
	return meta, data
}

// TestImage builds the image from a static binary and checks its config (a non-root user, the
// binary as entrypoint, no shell) and its files (nothing but the binary, passwd, group, the CA
// bundle and empty home and tmp directories), then writes it and reads both outputs back.
func TestImage(t *testing.T) {
	bin := staticBinary(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := Build(Options{Binary: bin, CACerts: ca, Version: "v1.2.3", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User: "65532:65532", Entrypoint: []string{"/redis-rebalancer"}, WorkingDir: "/",
		Env:    []string{"PATH=/", "HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels: map[string]string{SourceLabel: Source, VersionLabel: "v1.2.3"},
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if strings.HasPrefix(cf.Config.User, "0") || strings.HasPrefix(cf.Config.User, "root") {
		t.Errorf("user %q is root", cf.Config.User)
	}

	meta, data := layerFiles(t, img)
	var paths []string
	for p := range meta {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	wantPaths := []string{"/etc", "/etc/group", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt",
		"/home", "/home/nonroot", "/redis-rebalancer", "/tmp"}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh"} {
		if _, ok := meta[shell]; ok {
			t.Errorf("the image has a shell: %s", shell)
		}
	}
	if got := meta["/redis-rebalancer"]; got != "-rwxr-xr-x 0:0" {
		t.Errorf("binary mode/owner %q, want -rwxr-xr-x 0:0 (not writable by the user)", got)
	}
	if got := meta["/home/nonroot"]; !strings.HasSuffix(got, " 65532:65532") {
		t.Errorf("home %q, want owned by 65532:65532", got)
	}
	if !strings.Contains(string(data["/etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user:\n%s", data["/etc/passwd"])
	}
	binData, _ := os.ReadFile(bin)
	if !cmp.Equal(binData, data["/redis-rebalancer"]) {
		t.Error("the image's binary differs from the one given")
	}

	// Both outputs read back as the same image.
	dir := filepath.Join(t.TempDir(), "layout")
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if err := Write(img, dir, tarPath, "redis-rebalancer:v1.2.3"); err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := img.Digest()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != wantDigest {
		t.Errorf("layout holds %+v, want the image %s", m.Manifests, wantDigest)
	}
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	tcf, err := fromTar.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cf.Config, tcf.Config); diff != "" {
		t.Errorf("tarball's config (-layout +tarball):\n%s", diff)
	}

	// Reproducible: the same inputs give the same digest.
	again, err := Build(Options{Binary: bin, CACerts: ca, Version: "v1.2.3", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != wantDigest {
		t.Errorf("second build's digest %s, want %s", d, wantDigest)
	}
}

// TestImageRefusesDynamicBinaries: a binary with a program interpreter (the system's ls, linked
// against libc) would not start on an empty base; a file that is not ELF is no binary.
func TestImageRefusesDynamicBinaries(t *testing.T) {
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(Options{Binary: ls}); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("Build: %v, want a refusal of a dynamically linked binary", err)
	}
	if _, err := Build(Options{Binary: "image.go"}); err == nil || !strings.Contains(err.Error(), "not an ELF binary") {
		t.Errorf("Build of a Go source file: %v, want not an ELF binary", err)
	}
}
