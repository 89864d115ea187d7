// consumer: the workload of the real-node suite. It prints what it read from
// its environment and its files, as SHA-256 digests (never the values, so
// pod logs hold no Secret value), then keeps running and prints a line
// whenever a file's content changes:
//
//	env NAME sha256:HEX             each variable whose name starts with -env-prefix
//	file PATH sha256:HEX            each file under the given paths (Secret volumes:
//	                                their ..data folder and links are not listed twice)
//	apiserver gitVersion=v1.34.2    with -apiserver: GET /version through the in-cluster
//	                                config (the kubernetes Service, the pod's token and CA)
//	resolve NAME ADDR...            with -resolve NAME: its addresses, through the pod's
//	                                resolv.conf (the cluster DNS)
//	fetch URL LINE                  with -fetch URL: the first line of its body (plain HTTP),
//	                                tried for up to 30 s (a new Service takes a moment)
//	ready                           all of the above was printed; with -listen ADDR it
//	                                then serves HTTP there: GET / answers "consumer HOSTNAME"
//	changed file PATH sha256:HEX    a file's content changed later (checked every -interval)
//
// It exits 0 on SIGTERM.
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// files lists the regular files under each path (following links), skipping
// the hidden ..data entries of projected and Secret volumes.
func files(paths []string) []string {
	var out []string
	for _, p := range paths {
		entries, err := os.ReadDir(p)
		if err != nil { // a file, not a folder
			out = append(out, p)
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "..") {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out
}

func apiserverVersion() (string, error) {
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %sca.crt", sa)
	}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", "https://"+host+"/version", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct{ GitVersion string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		return "", fmt.Errorf("GET https://%s/version: status %d, %v", host, resp.StatusCode, err)
	}
	return v.GitVersion, nil
}

func get(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		resp, err := c.Get(url)
		if err != nil {
			last = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return line, nil
	}
	return "", last
}

func main() {
	prefix := flag.String("env-prefix", "", "print the variables whose names start with this (none if empty)")
	apiserver := flag.Bool("apiserver", false, "check the apiserver through the in-cluster config")
	resolve := flag.String("resolve", "", "a host name to look up")
	fetch := flag.String("fetch", "", "a URL to GET")
	listen := flag.String("listen", "", "serve HTTP on this address (e.g. :8080)")
	interval := flag.Duration("interval", 2*time.Second, "how often files are read again")
	flag.Parse()
	if *prefix != "" {
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, *prefix) {
				fmt.Printf("env %s %s\n", name, digest([]byte(value)))
			}
		}
	}
	seen := map[string]string{}
	for _, f := range files(flag.Args()) {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Printf("error file %s %v\n", f, err)
			continue
		}
		seen[f] = digest(b)
		fmt.Printf("file %s %s\n", f, seen[f])
	}
	if *apiserver {
		v, err := apiserverVersion()
		if err != nil {
			fmt.Printf("error apiserver %v\n", err)
		} else {
			fmt.Printf("apiserver gitVersion=%s\n", v)
		}
	}
	if *resolve != "" {
		if addrs, err := net.LookupHost(*resolve); err != nil {
			fmt.Printf("error resolve %s %v\n", *resolve, err)
		} else {
			sort.Strings(addrs)
			fmt.Printf("resolve %s %s\n", *resolve, strings.Join(addrs, " "))
		}
	}
	if *fetch != "" {
		line, err := get(*fetch)
		if err != nil {
			fmt.Printf("error fetch %s %v\n", *fetch, err)
		} else {
			fmt.Printf("fetch %s %s\n", *fetch, line)
		}
	}
	fmt.Println("ready")
	if *listen != "" {
		host, _ := os.Hostname()
		go func() {
			err := http.ListenAndServe(*listen, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintf(w, "consumer %s\n", host)
			}))
			fmt.Printf("error listen %v\n", err)
		}()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(*interval)
	for {
		select {
		case <-term:
			return
		case <-tick.C:
			for _, f := range files(flag.Args()) {
				if b, err := os.ReadFile(f); err == nil && digest(b) != seen[f] {
					seen[f] = digest(b)
					fmt.Printf("changed file %s %s\n", f, seen[f])
				}
			}
		}
	}
}
