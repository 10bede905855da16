package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"
)

// staticBinary builds a tiny static Go program (CGO_ENABLED=0) for linux/amd64, as `make image`
// builds the real one, and returns its path.
func staticBinary(t *testing.T) string {
	t.Helper()
	return staticBinaryFor(t, "amd64")
}

// stubs holds the stand-in binaries built so far, by architecture, in stubDir (TestMain removes it).
var (
	stubMu  sync.Mutex
	stubs   = map[string]string{}
	stubDir string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stubDir != "" {
		os.RemoveAll(stubDir)
	}
	os.Exit(code)
}

// staticBinaryFor builds the tiny static program for linux/arch (once per test process).
func staticBinaryFor(t *testing.T, arch string) string {
	t.Helper()
	stubMu.Lock()
	defer stubMu.Unlock()
	if p, ok := stubs[arch]; ok {
		return p
	}
	if stubDir == "" {
		d, err := os.MkdirTemp("", "image-test-")
		if err != nil {
			t.Fatal(err)
		}
		stubDir = d
	}
	dir := filepath.Join(stubDir, arch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os/user\"\n\nfunc main() { _, _ = user.Current() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module stand/in\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the stand-in binary: %v\n%s", err, b)
	}
	stubs[arch] = out
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
	created := time.Date(2026, 11, 20, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	opts := Options{Binary: bin, CACerts: ca, Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567", Created: created, Licenses: "Apache-2.0", Arch: "amd64"}
	img, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		User: "65532:65532", Entrypoint: []string{"/redis-rebalancer"}, WorkingDir: "/",
		Env: []string{"PATH=/", "HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels: map[string]string{
			"org.opencontainers.image.title": "redis-rebalancer", "org.opencontainers.image.version": "v1.2.3",
			"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567", "org.opencontainers.image.created": "2026-11-20T08:30:00Z",
			"org.opencontainers.image.source": "https://github.com/redis-rebalancer/redis-rebalancer", "org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("config created %s, want the commit's time %s", cf.Created.Time, created)
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
	one, err := Index(opts.Labels(), img)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(one, img, dir, tarPath, "redis-rebalancer:v1.2.3"); err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := img.Digest()
	_, _, m := layoutIndex(t, dir)
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != wantDigest {
		t.Errorf("layout's index holds %+v, want the image %s", m.Manifests, wantDigest)
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
	again, err := Build(opts)
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
	if _, err := Build(Options{Binary: staticBinaryFor(t, "arm64"), Arch: "amd64"}); err == nil || !strings.Contains(err.Error(), "built for EM_AARCH64, not amd64") {
		t.Errorf("Build of an arm64 binary as amd64: %v, want a refusal", err)
	}
}

// TestImageIndex builds the image for linux/amd64 and linux/arm64, as `make image` does: the
// layout holds one OCI image index with both platforms' manifests, each with its platform, each
// image's binary for its architecture, the index annotated with the OCI labels; the tarball is
// the amd64 image.
func TestImageIndex(t *testing.T) {
	opts := Options{Version: "v0.1.0", Revision: "abc", Created: time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC), Licenses: "Apache-2.0"}
	bins := map[string]string{"amd64": staticBinaryFor(t, "amd64"), "arm64": staticBinaryFor(t, "arm64")}
	dir := filepath.Join(t.TempDir(), "layout")
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if err := run(opts, []string{"amd64=" + bins["amd64"], "arm64=" + bins["arm64"]}, "2026-11-20T08:30:00Z", dir, tarPath, "registry.example.com/redis-rebalancer:v0.1.0"); err != nil {
		t.Fatal(err)
	}
	tm, idx, m := layoutIndex(t, dir)
	if name := tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; name != "registry.example.com/redis-rebalancer:v0.1.0" {
		t.Errorf("layout's index named %q, want the tag", name)
	}
	if m.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index media type %s, want an OCI image index", m.MediaType)
	}
	if diff := cmp.Diff(opts.Labels(), m.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != d.Platform.Architecture || cf.Config.Labels[RevisionLabel] != "abc" || cf.Config.Labels[CreatedLabel] != "2026-11-20T08:30:00Z" {
			t.Errorf("%s: config architecture %s, labels %v", d.Platform, cf.Architecture, cf.Config.Labels)
		}
		_, data := layerFiles(t, img)
		want, _ := os.ReadFile(bins[d.Platform.Architecture])
		if !cmp.Equal(want, data["/redis-rebalancer"]) {
			t.Errorf("%s: the image's binary is not the %s build", d.Platform, d.Platform.Architecture)
		}
	}
	sort.Strings(platforms)
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cf, err := fromTar.ConfigFile(); err != nil || cf.Architecture != "amd64" {
		t.Errorf("tarball's image: %v (%v), want the amd64 image", cf, err)
	}
}

// TestManifestsNameTheImage: `make image` at the release (VERSION = the chart's appVersion, what
// git describe says on the release's tag) tags the image the manifests run: the chart's
// image.repository and appVersion, and every kustomize overlay's images entry.
func TestManifestsNameTheImage(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(rel string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	read("deploy/helm/redis-rebalancer/Chart.yaml", &chart)
	var values struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	read("deploy/helm/redis-rebalancer/values.yaml", &values)
	if chart.AppVersion == "" || values.Image.Tag != "" {
		t.Fatalf("chart appVersion %q, image.tag %q: want the release as appVersion and no tag (the appVersion is the tag)", chart.AppVersion, values.Image.Tag)
	}
	chartImage := values.Image.Repository + ":" + chart.AppVersion

	cmd := exec.Command("make", "-n", "-s", "image", "VERSION="+chart.AppVersion)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`-tag (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("make -n image prints no -tag:\n%s", out)
	}
	if got := string(m[1]); got != chartImage {
		t.Errorf("make image at the release tags %s; the chart runs %s", got, chartImage)
	}
	for _, a := range []string{"amd64", "arm64"} {
		if !strings.Contains(string(out), "-binary "+a+"=") {
			t.Errorf("make image builds no %s image:\n%s", a, out)
		}
	}

	overlays, err := filepath.Glob(filepath.Join(root, "deploy", "overlays", "*", "kustomization.yaml"))
	if err != nil || len(overlays) == 0 {
		t.Fatalf("no overlay: %v", err)
	}
	for _, o := range overlays {
		rel, _ := filepath.Rel(root, o)
		var k struct {
			Images []struct{ Name, NewName, NewTag string } `json:"images"`
		}
		read(rel, &k)
		if len(k.Images) != 1 || k.Images[0].NewName+":"+k.Images[0].NewTag != chartImage {
			t.Errorf("%s names %+v, want %s", rel, k.Images, chartImage)
		}
	}
}

// layoutIndex opens the OCI layout at dir, whose top index must list exactly one index, and
// returns the top index's manifest, that index and its manifest.
func layoutIndex(t *testing.T, dir string) (*v1.IndexManifest, v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil || len(tm.Manifests) != 1 {
		t.Fatalf("layout's top index %+v (%v), want one index", tm, err)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return tm, idx, m
}

// TestReleaseTagBuildsTheManifestsImage: on a clone of this commit tagged with the chart's
// appVersion (the release, v0.1.0), `make image` derives its version from the tag (git describe)
// and tags exactly the image the manifests run, with the commit as its revision; one commit later
// it builds another version and tag. The tag is made in the clone only.
func TestReleaseTagBuildsTheManifestsImage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	head := git(root, "rev-parse", "HEAD")
	clone := t.TempDir()
	git(clone, "clone", "--quiet", "--shared", "--no-checkout", root, ".")
	git(clone, "checkout", "--quiet", head)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile(filepath.Join(clone, "deploy/helm/redis-rebalancer/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct{ Repository string } `json:"image"`
	}
	if b, err = os.ReadFile(filepath.Join(clone, "deploy/helm/redis-rebalancer/values.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	// Tags of the repository (a release already made) are not the clone's concern: only this one.
	for _, tag := range strings.Fields(git(clone, "tag", "--list")) {
		git(clone, "tag", "-d", tag)
	}
	git(clone, "tag", "-a", chart.AppVersion, "-m", "release "+chart.AppVersion)
	makeImage := func() string {
		t.Helper()
		cmd := exec.Command("make", "-n", "-s", "image")
		cmd.Dir = clone
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n image: %v\n%s", err, out)
		}
		return string(out)
	}
	out := makeImage()
	want := values.Image.Repository + ":" + chart.AppVersion
	for _, s := range []string{"-tag " + want + " ", "-version " + chart.AppVersion + " ", "-revision " + head + " "} {
		if !strings.Contains(out, s) {
			t.Errorf("make image on the commit tagged %s: no %q in\n%s", chart.AppVersion, s, out)
		}
	}
	git(clone, "commit", "--quiet", "--allow-empty", "-m", "after the release")
	if out := makeImage(); strings.Contains(out, "-tag "+want+" ") || !strings.Contains(out, "-version "+chart.AppVersion+"-1-g") {
		t.Errorf("make image one commit after the release: want version %s-1-g<commit> and another tag than %s:\n%s", chart.AppVersion, want, out)
	}
}
