// Package image builds redis-rebalancer's container image without a Docker daemon, with
// go-containerregistry: an empty base (no registry can be reached to pull distroless from), one
// layer holding the static binary, /etc/passwd and /etc/group entries for the non-root user
// 65532 (distroless's "nonroot") and, when given, a CA bundle; the config runs the binary as that
// user. No shell, no package manager, nothing else. It writes an OCI image layout and a
// docker-loadable tarball (`docker load`, `podman load`, `kind load image-archive`).
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
	// SourceLabel and VersionLabel are the OCI annotations set as config labels.
	SourceLabel  = "org.opencontainers.image.source"
	VersionLabel = "org.opencontainers.image.version"
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
	// Version is the image's version label.
	Version string
	// Arch is the image's architecture (runtime.GOARCH when empty).
	Arch string
}

// Build returns the image. It fails when the binary is missing, not an ELF file, or dynamically
// linked (it would not start on an empty base).
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := checkStatic(opts.Binary); err != nil {
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
	arch := opts.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=/home/nonroot"},
		Labels:     map[string]string{SourceLabel: Source, VersionLabel: opts.Version},
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

// Write writes img as an OCI image layout in dir (replaced) and as a docker-loadable tarball at
// tarPath, tagged ref.
func Write(img v1.Image, dir, tarPath, ref string) error {
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
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(tarPath), 0o755); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	return nil
}

// checkStatic returns an error unless path is an ELF executable without a program interpreter
// (a statically linked binary).
func checkStatic(path string) error {
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
