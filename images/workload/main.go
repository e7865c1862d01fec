// Command workload is chaoskit's test workload: an HTTP server whose CPU cost
// is set per request (so an HPA has something to scale on), and the clients
// that drive and probe it from inside the cluster.
//
//	workload serve [-addr :8080]          serve /, /healthz, /readyz, /burn?ms=N, /echo
//	workload load URL [-c N] [-for D]      keep N concurrent requests going
//	workload get URL [-timeout D]          one request; prints the body, exit 1 on failure
//	workload probe URL [-every D] [-timeout D] [-method M] [-header "K: V"]... [-body B]
//	                   [-status 200,2xx,200-299] [-contains TEXT] [-matches RE]
//	                                       one request every D until killed; a line per request:
//	                                       "<start unix ms> <HTTP status, or 0> <latency ms> [error]"
//	                                       (an error after a status: a criterion the answer missed)
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: workload serve|load|get ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "get":
		err = get(os.Args[2:])
	case "probe":
		err = probe(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", ":8080", "listen address")
	readyAfter := fs.Duration("ready-after", 0, "report not ready until this long after start")
	_ = fs.Parse(args)

	host, _ := os.Hostname()
	started := time.Now()
	var notReady atomic.Bool // flipped by POST /readyz?ready=false, for readiness faults
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s\n", host)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			notReady.Store(r.URL.Query().Get("ready") == "false")
		}
		if notReady.Load() || time.Since(started) < *readyAfter {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// /echo answers with the request as it arrived (method, headers sorted, then the body): what a probe sent
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		names := make([]string, 0, len(r.Header))
		for name := range r.Header {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "%s %s\n", r.Method, host)
		for _, name := range names {
			fmt.Fprintf(w, "%s: %s\n", name, strings.Join(r.Header[name], ", "))
		}
		fmt.Fprintln(w)
		_, _ = io.Copy(w, io.LimitReader(r.Body, 1<<16))
	})
	mux.HandleFunc("/burn", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 || ms > 10000 {
			ms = 100
		}
		burn(time.Duration(ms) * time.Millisecond)
		fmt.Fprintf(w, "%s burned %dms\n", host, ms)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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

// burn spins one CPU for d of wall time; the HPA sees this as utilisation.
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

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	conc := fs.Int("c", 4, "concurrent requests")
	dur := fs.Duration("for", 0, "stop after this long (0: until killed)")
	_ = fs.Parse(reorder(args))
	if fs.NArg() != 1 {
		return fmt.Errorf("load needs one URL")
	}
	url := fs.Arg(0)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < *conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if fetch(ctx, client, url) == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("ok=%d failed=%d\n", ok.Load(), failed.Load())
	return nil
}

func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	timeout := fs.Duration("timeout", 5*time.Second, "request timeout")
	_ = fs.Parse(reorder(args))
	if fs.NArg() != 1 {
		return fmt.Errorf("get needs one URL")
	}
	resp, err := (&http.Client{Timeout: *timeout}).Get(fs.Arg(0))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	os.Stdout.Write(body)
	if resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// headers collects repeated -header "Name: value" flags.
type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// criteria say whether an answer counts as a success: its status, and its body containing or matching a text.
type criteria struct {
	status   [][2]int // inclusive ranges; none: any status below 400
	contains string
	matches  *regexp.Regexp
}

func parseStatus(spec string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			continue
		case len(part) == 3 && strings.HasSuffix(part, "xx"):
			c, err := strconv.Atoi(part[:1])
			if err != nil {
				return nil, fmt.Errorf("status %q", part)
			}
			out = append(out, [2]int{c * 100, c*100 + 99})
		case strings.Contains(part, "-"):
			lo, errLo := strconv.Atoi(strings.SplitN(part, "-", 2)[0])
			hi, errHi := strconv.Atoi(strings.SplitN(part, "-", 2)[1])
			if errLo != nil || errHi != nil {
				return nil, fmt.Errorf("status %q", part)
			}
			out = append(out, [2]int{lo, hi})
		default:
			c, err := strconv.Atoi(part)
			if err != nil {
				return nil, fmt.Errorf("status %q", part)
			}
			out = append(out, [2]int{c, c})
		}
	}
	return out, nil
}

// missed says which criterion an answer missed, or "" when it meets them all.
func (c criteria) missed(status int, body []byte) string {
	ok := len(c.status) == 0 && status < 400
	for _, r := range c.status {
		ok = ok || (r[0] <= status && status <= r[1])
	}
	if !ok {
		return fmt.Sprintf("status %d not accepted", status)
	}
	if c.contains != "" && !bytes.Contains(body, []byte(c.contains)) {
		return fmt.Sprintf("body lacks %q", c.contains)
	}
	if c.matches != nil && !c.matches.Match(body) {
		return fmt.Sprintf("body does not match %q", c.matches.String())
	}
	return ""
}

// probe asks URL every interval (not after the last answer: a slow answer must not thin the samples) and prints
// one line per request as it completes, so a reader of the pod's log gets every sample with its own start time.
func probe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	every := fs.Duration("every", 500*time.Millisecond, "time between two requests")
	timeout := fs.Duration("timeout", 2*time.Second, "request timeout")
	method := fs.String("method", http.MethodGet, "request method")
	body := fs.String("body", "", "request body")
	status := fs.String("status", "", "accepted statuses: codes, classes (2xx), ranges (200-299); default below 400")
	contains := fs.String("contains", "", "text the response body must contain")
	matches := fs.String("matches", "", "regular expression the response body must match")
	var hdrs headers
	fs.Var(&hdrs, "header", `a request header, "Name: value" (repeatable)`)
	_ = fs.Parse(reorder(args))
	if fs.NArg() != 1 {
		return fmt.Errorf("probe needs one URL")
	}
	url := fs.Arg(0)
	want := criteria{contains: *contains}
	var err error
	if want.status, err = parseStatus(*status); err != nil {
		return err
	}
	if *matches != "" {
		if want.matches, err = regexp.Compile(*matches); err != nil {
			return err
		}
	}
	readBody := want.contains != "" || want.matches != nil
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// a new connection per request, as a new client would make: it sees the node's Service rules as they are now
	// (a kept-alive connection rides its conntrack entry through rules that were flushed or never programmed)
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	var out sync.Mutex
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		start := time.Now()
		go func() {
			status, errText := 0, ""
			resp, err := ask(client, *method, url, *body, hdrs)
			if err == nil {
				var got []byte
				if readBody {
					got, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
				if why := want.missed(status, got); why != "" {
					errText = " " + why
				}
			} else {
				errText = " " + oneLine(err.Error())
			}
			out.Lock()
			fmt.Printf("%d %d %.1f%s\n", start.UnixMilli(), status, float64(time.Since(start).Microseconds())/1000, errText)
			out.Unlock()
		}()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func ask(c *http.Client, method, url, body string, hdrs headers) (*http.Response, error) {
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		return nil, err
	}
	for _, h := range hdrs {
		name, value, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(name), "Host") {
			req.Host = strings.TrimSpace(value)
			continue
		}
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return c.Do(req)
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

func fetch(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// reorder puts flags before positional arguments, so "get URL -timeout 1s" works.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		if len(args[i]) > 1 && args[i][0] == '-' {
			flags = append(flags, args[i])
			if i+1 < len(args) && !hasValue(args[i]) && args[i+1] != "" && args[i+1][0] != '-' {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, args[i])
	}
	return append(flags, pos...)
}

func hasValue(flagArg string) bool {
	for _, c := range flagArg {
		if c == '=' {
			return true
		}
	}
	return false
}
