// http_server PORT BODY - Go's side of the wrk benchmark (scripts/bench.sh):
// a raw net.Conn server with a goroutine per connection that answers each
// GET with threaded_http's exact bytes (c-tests/http_common.h: no Date
// header, BODY bytes of the same alphabet), keep-alive and pipelining
// included. Only what wrk sends is handled: a request is everything up to
// its blank line; a request with "Connection: close" gets the reply with
// that header and the connection is closed after it.
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
)

const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

func reply(body int, conn string) []byte {
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nServer: corun-bench\r\nContent-Type: text/plain\r\n"+
		"Content-Length: %d\r\n%s\r\n", body, conn)
	b := []byte(head)
	for i := 0; i < body; i++ {
		b = append(b, alphabet[i%len(alphabet)])
	}
	return b
}

func serve(c net.Conn, keep, closing []byte) {
	defer c.Close()
	in := make([]byte, 0, 8192)
	buf := make([]byte, 8192)
	out := make([]byte, 0, 16384)
	for {
		n, err := c.Read(buf)
		if n == 0 || err != nil {
			return
		}
		in = append(in, buf[:n]...)
		out = out[:0]
		done := false
		for {
			end := bytes.Index(in, []byte("\r\n\r\n"))
			if end < 0 {
				break
			}
			req := in[:end]
			if bytes.Contains(bytes.ToLower(req), []byte("connection: close")) {
				out = append(out, closing...)
				done = true
				break
			}
			out = append(out, keep...)
			in = in[end+4:]
		}
		if len(in) > 8192 {
			return
		}
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
		if done {
			return
		}
		in = append(in[:0], in...)
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: http_server PORT BODY")
		os.Exit(2)
	}
	body, err := strconv.Atoi(os.Args[2])
	if err != nil || body < 0 || body > 8192 {
		fmt.Fprintln(os.Stderr, "bad body size")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keep, closing := reply(body, ""), reply(body, "Connection: close\r\n")
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go serve(c, keep, closing)
	}
}
