// Command netd is chaoskit's pod network for offline kind clusters.
//
// kind's own CNI (kindnetd) comes from a registry we cannot reach, so each
// node runs this agent instead: it writes a ptp + host-local CNI config for
// the node's podCIDR and routes every other node's podCIDR via that node's
// InternalIP. All nodes share one L2 network (the docker bridge), so plain
// routes are enough.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
)

const (
	saDir    = "/var/run/secrets/kubernetes.io/serviceaccount"
	confDir  = "/etc/cni/net.d"
	confName = "10-chaoskit.conflist"
	interval = 5 * time.Second
	// every node but the simulated ones (kwok's, label type=kwok): no machine stands behind them to route to
	nodesPath = "/api/v1/nodes?labelSelector=type%21%3Dkwok"
)

type nodeList struct {
	Items []node `json:"items"`
}

type node struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		PodCIDR string `json:"podCIDR"`
	} `json:"spec"`
	Status struct {
		Addresses []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

func (n node) internalIP() string {
	for _, a := range n.Status.Addresses {
		if a.Type == "InternalIP" {
			return a.Address
		}
	}
	return ""
}

func main() {
	self := os.Getenv("NODE_NAME")
	if self == "" {
		log.Fatal("NODE_NAME is not set")
	}
	client, base, err := apiClient()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		log.Printf("enable ip_forward: %v", err)
	}
	for {
		if err := sync(client, base, self); err != nil {
			log.Printf("sync: %v", err)
		}
		time.Sleep(interval)
	}
}

func apiClient() (*http.Client, string, error) {
	ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	// kind injects CONTROL_PLANE_ENDPOINT: reaching the API server directly does not wait for kube-proxy.
	endpoint := os.Getenv("CONTROL_PLANE_ENDPOINT")
	if endpoint == "" {
		endpoint = net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, "https://" + endpoint, nil
}

func sync(c *http.Client, base, self string) error {
	token, err := os.ReadFile(filepath.Join(saDir, "token"))
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodGet, base+nodesPath, nil)
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	// read to the end before closing: a body closed with its last bytes unread drops the connection mid-response,
	// which the API server logs as "Timeout or abort while handling" (every few polls, on every node)
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list nodes: HTTP %d", resp.StatusCode)
	}
	var nodes nodeList
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if n.Spec.PodCIDR == "" {
			continue
		}
		if n.Metadata.Name == self {
			if err := writeConfig(n.Spec.PodCIDR); err != nil {
				return err
			}
			continue
		}
		if err := routeVia(n.Spec.PodCIDR, n.internalIP()); err != nil {
			log.Printf("route %s via %s: %v", n.Spec.PodCIDR, n.internalIP(), err)
		}
	}
	return nil
}

func writeConfig(podCIDR string) error {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "chaoskit",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": false,
				"mtu":    1500,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": []any{[]any{map[string]any{"subnet": podCIDR}}},
					"routes": []any{map[string]any{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, _ := json.MarshalIndent(conf, "", "  ")
	path := filepath.Join(confDir, confName)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s for podCIDR %s", path, podCIDR)
	return os.Rename(tmp, path) // kubelet must never read a half-written config
}

func routeVia(cidr, gw string) error {
	_, dst, err := net.ParseCIDR(cidr)
	if err != nil {
		return err
	}
	ip := net.ParseIP(gw)
	if ip == nil {
		return fmt.Errorf("no InternalIP")
	}
	return netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: ip})
}
