// Command image builds redis-rebalancer's container image without a Docker daemon (image.go):
// `make image` runs it on the static binaries it built, one per platform.
//
//	go run ./hack/image -binary amd64=bin/linux/amd64/redis-rebalancer -binary arm64=bin/linux/arm64/redis-rebalancer \
//	  -version v0.1.0 -revision $(git rev-parse HEAD) -created $(git log -1 --format=%cI) -licenses Apache-2.0 \
//	  -tag registry.example.com/redis-rebalancer:v0.1.0 -ca-certs /etc/ssl/certs/ca-certificates.crt
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// binaries is the repeatable -binary ARCH=PATH flag.
type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var opts Options
	var bins binaries
	var dir, tarPath, ref, created string
	flag.Var(&bins, "binary", "ARCH=PATH: the statically linked linux binary for ARCH (amd64, arm64); repeat it for each platform of the index")
	flag.StringVar(&opts.CACerts, "ca-certs", "", "PEM CA bundle to include at "+CACertsPath+" (none when empty)")
	flag.StringVar(&opts.Version, "version", "dev", "the image's version label")
	flag.StringVar(&opts.Revision, "revision", "", "the git commit built (the revision label)")
	flag.StringVar(&created, "created", "", "when the image counts as created, RFC 3339 (the commit's time: git log -1 --format=%cI); the Unix epoch when empty")
	flag.StringVar(&opts.Licenses, "licenses", "", "SPDX license expression (the licenses label)")
	flag.StringVar(&dir, "layout", "bin/image", "directory of the OCI image layout holding the index (replaced)")
	flag.StringVar(&tarPath, "tarball", "bin/redis-rebalancer-image.tar", "docker-loadable tarball of this machine's platform (or the first -binary's)")
	flag.StringVar(&ref, "tag", "redis-rebalancer:dev", "the image's reference in the tarball and the layout")
	flag.Parse()
	if err := run(opts, bins, created, dir, tarPath, ref); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(opts Options, bins []string, created, dir, tarPath, ref string) error {
	if len(bins) == 0 {
		return fmt.Errorf("image: -binary ARCH=PATH is required")
	}
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("image: -created: %w", err)
		}
		opts.Created = t
	}
	var imgs []v1.Image
	var tarImg v1.Image
	for _, b := range bins {
		arch, path, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("image: -binary %q: want ARCH=PATH", b)
		}
		o := opts
		o.Arch, o.Binary = arch, path
		img, err := Build(o)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
		if tarImg == nil || arch == runtime.GOARCH {
			tarImg = img
		}
	}
	idx, err := Index(opts.Labels(), imgs...)
	if err != nil {
		return err
	}
	if err := Write(idx, tarImg, dir, tarPath, ref); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: OCI layout %s (an index of %d platforms), tarball %s, index digest %s\n", ref, dir, len(imgs), tarPath, d)
	return nil
}
