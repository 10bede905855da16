// Package image builds redis-rebalancer's container image without a Docker daemon, with
// go-containerregistry: an empty base (no registry can be reached to pull distroless from), one
// layer holding the static binary, /etc/passwd and /etc/group entries for the non-root user
// 65532 (distroless's "nonroot") and, when given, a CA bundle; the config runs the binary as that
// user. No shell, no package manager, nothing else. One image per platform (linux/amd64 and
// linux/arm64 from `make image`), gathered in an OCI image index; each carries the OCI
// annotations (org.opencontainers.image.*: title, version, revision, created from the commit's
// time, source, licenses) as config labels, and the index as annotations. It writes an OCI image
// layout holding the index and a docker-loadable tarball of one platform's image (`docker load`,
// `podman load`, `kind load image-archive`: they load no index).
//
// The Dockerfile at the repository's root builds the same image on distroless/static:nonroot
// where a daemon and a registry are at hand. hack/image is the command `make image` runs.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed parts.
const (
	// BinaryPath is where the binary lies in the image, and the entrypoint.
	BinaryPath = "/redis-rebalancer"
	// CACertsPath is where the CA bundle lies (Go's crypto/x509 reads it on Linux).
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// User is the user and group the container runs as: distroless's nonroot, 65532:65532.
	User = "65532:65532"
	// The OCI annotations (image-spec annotations.md) set as config labels and on the index.
	TitleLabel    = "org.opencontainers.image.title"
	SourceLabel   = "org.opencontainers.image.source"
	VersionLabel  = "org.opencontainers.image.version"
	RevisionLabel = "org.opencontainers.image.revision"
	CreatedLabel  = "org.opencontainers.image.created"
	LicensesLabel = "org.opencontainers.image.licenses"
	// Title is the image's title.
	Title = "redis-rebalancer"
	// Source is the project's repository.
	Source = "https://github.com/redis-rebalancer/redis-rebalancer"
)

// passwd and group give the non-root user a name (tools that look the user up, and `id`-less
// diagnostics, see "nonroot" rather than a bare number).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Options configure Build.
type Options struct {
	// Binary is the path of the statically linked linux binary (CGO_ENABLED=0). Required.
	Binary string
	// CACerts is the path of a PEM CA bundle to put at CACertsPath ("": none; the API server's
	// CA comes with the service account, Redis's with --redis-tls-ca).
	CACerts string
	// Version is the image's version label (git describe's output; a release tag at a release).
	Version string
	// Revision is the git commit the binary was built from (the revision label).
	Revision string
	// Created is when the image counts as created: the commit's time, so that the same commit
	// gives the same image (the created label and the config's created; the Unix epoch when
	// zero).
	Created time.Time
	// Licenses is the SPDX license expression of the licenses label ("": no label).
	Licenses string
	// Arch is the image's architecture (runtime.GOARCH when empty); the binary must be built for
	// it (its ELF machine is checked).
	Arch string
}

// Labels returns the OCI annotations opts give an image: title, source and version always;
// revision, created and licenses when known.
func (opts Options) Labels() map[string]string {
	l := map[string]string{TitleLabel: Title, SourceLabel: Source, VersionLabel: opts.Version}
	if opts.Revision != "" {
		l[RevisionLabel] = opts.Revision
	}
	if !opts.Created.IsZero() {
		l[CreatedLabel] = opts.Created.UTC().Format(time.RFC3339)
	}
	if opts.Licenses != "" {
		l[LicensesLabel] = opts.Licenses
	}
	return l
}

// elfMachines are the ELF machines of the architectures an image is built for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Build returns the image of one platform. It fails when the binary is missing, not an ELF file,
// dynamically linked (it would not start on an empty base), or built for another architecture
// than opts.Arch.
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	arch := opts.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if err := checkStatic(opts.Binary, arch); err != nil {
		return nil, fmt.Errorf("image: %s: %w", opts.Binary, err)
	}
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/passwd", data: []byte(passwd), mode: 0o644},
		{name: "etc/group", data: []byte(group), mode: 0o644},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/nonroot/", dir: true, mode: 0o700, uid: 65532, gid: 65532},
		{name: "tmp/", dir: true, mode: 0o1777},
		{name: BinaryPath[1:], data: bin, mode: 0o755},
	}
	if opts.CACerts != "" {
		ca, err := os.ReadFile(opts.CACerts)
		if err != nil {
			return nil, fmt.Errorf("image: CA bundle: %w", err)
		}
		files = append(files,
			file{name: "etc/ssl/", dir: true, mode: 0o755}, file{name: "etc/ssl/certs/", dir: true, mode: 0o755},
			file{name: CACertsPath[1:], data: ca, mode: 0o644})
	}
	layerTar, err := tarOf(files)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := opts.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: created.UTC()}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels:     opts.Labels(),
	}
	if opts.CACerts != "" {
		cf.Config.Env = append(cf.Config.Env, "SSL_CERT_FILE="+CACertsPath)
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// Index gathers the images of several platforms in an OCI image index, each manifest's
// descriptor with its platform (from the image's config), the index annotated with labels (the
// OCI annotations Options.Labels gives).
func Index(labels map[string]string, imgs ...v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	seen := map[string]bool{}
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("image: index: %w", err)
		}
		p := cf.Platform()
		if seen[p.String()] {
			return nil, fmt.Errorf("image: index: two images for %s", p)
		}
		seen[p.String()] = true
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	return mutate.Annotations(idx, labels).(v1.ImageIndex), nil
}

// Write writes idx as an OCI image layout in dir (replaced), the index named ref, and tarImg (one
// platform's image: docker load takes no index) as a docker-loadable tarball at tarPath, tagged
// ref.
func Write(idx v1.ImageIndex, tarImg v1.Image, dir, tarPath, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image: tag: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(tarPath), 0o755); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := tarball.WriteToFile(tarPath, tag, tarImg); err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	return nil
}

// checkStatic returns an error unless path is an ELF executable for arch without a program
// interpreter (a statically linked binary).
func checkStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it has a program interpreter): build it with CGO_ENABLED=0")
		}
	}
	if want, ok := elfMachines[arch]; ok && f.Machine != want {
		return fmt.Errorf("built for %s, not %s (GOARCH=%s)", f.Machine, arch, arch)
	}
	return nil
}

// file is one entry of the layer.
type file struct {
	name     string
	data     []byte
	dir      bool
	mode     int64
	uid, gid int
}

// tarOf writes files as a tar stream with zero timestamps (reproducible).
func tarOf(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !f.dir {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
