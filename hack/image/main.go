// Command image builds redis-rebalancer's container image without a Docker daemon (image.go):
// `make image` runs it on the static binary it built.
//
//	go run ./hack/image -binary bin/linux/redis-rebalancer -version v0.1.0 -ca-certs /etc/ssl/certs/ca-certificates.crt
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var opts Options
	var dir, tarPath, ref string
	flag.StringVar(&opts.Binary, "binary", "bin/linux/redis-rebalancer", "the statically linked linux binary")
	flag.StringVar(&opts.CACerts, "ca-certs", "", "PEM CA bundle to include at "+CACertsPath+" (none when empty)")
	flag.StringVar(&opts.Version, "version", "dev", "the image's version label")
	flag.StringVar(&opts.Arch, "arch", "", "the image's architecture (default: this machine's)")
	flag.StringVar(&dir, "layout", "bin/image", "directory of the OCI image layout (replaced)")
	flag.StringVar(&tarPath, "tarball", "bin/redis-rebalancer-image.tar", "docker-loadable tarball")
	flag.StringVar(&ref, "tag", "redis-rebalancer:dev", "the image's reference in the tarball and the layout")
	flag.Parse()
	img, err := Build(opts)
	if err == nil {
		err = Write(img, dir, tarPath, ref)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("%s: OCI layout %s, tarball %s, digest %s\n", ref, dir, tarPath, d)
}
