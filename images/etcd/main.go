// Command etcd is etcd's own server entry point, built from its Go module
// because the etcd image cannot be pulled here.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
