// Command shop is the example application chaoskit's example playbooks test: a storefront that answers every
// request by asking a prices backend through its Service. It is not chaoskit's workload; it stands for "your app".
//
//	shop storefront [-addr :8080] [-prices http://prices:8080]   GET / asks the backend, 502 when it cannot
//	shop prices [-addr :8080] [-burn 20ms]                       GET /price?item=X costs -burn of CPU
//
// Both serve /healthz (alive) and /readyz (ready: the storefront only once it has reached the backend once).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: shop storefront|prices [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", ":8080", "listen address")
	prices := fs.String("prices", "http://prices:8080", "the prices backend (storefront)")
	burnFor := fs.Duration("burn", 20*time.Millisecond, "CPU each price costs (prices)")
	_ = fs.Parse(os.Args[2:])
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	switch os.Args[1] {
	case "storefront":
		storefront(mux, *prices)
	case "prices":
		pricesBackend(mux, *burnFor)
	default:
		fmt.Fprintf(os.Stderr, "shop: unknown role %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := serve(*addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

type price struct {
	Item  string `json:"item"`
	Cents int    `json:"cents"`
	By    string `json:"by"`
}

func pricesBackend(mux *http.ServeMux, cost time.Duration) {
	host, _ := os.Hostname()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/price", func(w http.ResponseWriter, r *http.Request) {
		item := r.URL.Query().Get("item")
		if item == "" {
			item = "tea"
		}
		burn(cost)
		h := fnv.New32a()
		_, _ = h.Write([]byte(item))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(price{item, 100 + int(h.Sum32()%900), host})
	})
}

func storefront(mux *http.ServeMux, backend string) {
	client := &http.Client{Timeout: 2 * time.Second}
	var reached atomic.Bool // ready once the backend answered: a storefront without prices serves nobody
	ask := func(ctx context.Context, item string) (price, error) {
		var p price
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, backend+"/price?item="+item, nil)
		if err != nil {
			return p, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return p, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			return p, fmt.Errorf("prices answered %d: %s", resp.StatusCode, body)
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		if err == nil {
			reached.Store(true)
		}
		return p, err
	}
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !reached.Load() {
			if _, err := ask(r.Context(), "tea"); err != nil {
				http.Error(w, "prices not reached yet: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		item := r.URL.Query().Get("item")
		if item == "" {
			item = "tea"
		}
		p, err := ask(r.Context(), item)
		if err != nil {
			http.Error(w, "no price: "+err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, "%s costs %d.%02d (priced by %s)\n", p.Item, p.Cents/100, p.Cents%100, p.By)
	})
}

func serve(addr string, mux *http.ServeMux) error {
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// burn spins one CPU for d of wall time, so the prices HPA has utilisation to scale on.
func burn(d time.Duration) {
	end := time.Now().Add(d)
	x := 1.0
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			x = x*1.0000001 + 0.0000001
		}
	}
	_ = x
}
