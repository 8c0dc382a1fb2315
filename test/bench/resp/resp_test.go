package resp

import (
	"bytes"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAppendCommandEncodesBulkStrings(t *testing.T) {
	got := string(AppendCommand(nil, "EVALSHA", "abc", "1", ""))
	want := "*4\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$0\r\n\r\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestReadValueDecodesEveryType(t *testing.T) {
	tests := []struct {
		name string
		wire string
		want Value
	}{
		{"a simple string", "+OK\r\n", Value{Type: SimpleString, Str: "OK"}},
		{"an error reply", "-NOSCRIPT no script\r\n", Value{Type: Error, Str: "NOSCRIPT no script"}},
		{"a negative integer", ":-42\r\n", Value{Type: Integer, Int: -42}},
		{"a bulk string with CRLF inside", "$4\r\na\r\nb\r\n", Value{Type: BulkString, Str: "a\r\nb"}},
		{"a null bulk string", "$-1\r\n", Value{Type: BulkString, Null: true}},
		{"a nested array", "*2\r\n:1\r\n*1\r\n+x\r\n", Value{Type: Array, Array: []Value{
			{Type: Integer, Int: 1}, {Type: Array, Array: []Value{{Type: SimpleString, Str: "x"}}}}}},
		{"a null array", "*-1\r\n", Value{Type: Array, Null: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewReader(strings.NewReader(tt.wire)).ReadValue()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v want %+v", got, tt.want)
			}
		})
	}
}

func TestMalformedRepliesAreProtocolErrors(t *testing.T) {
	for _, wire := range []string{"?x\r\n", ":12a\r\n", "+OK\n", "$3\r\nabcd\r\n", "*x\r\n"} {
		_, err := NewReader(strings.NewReader(wire)).ReadValue()
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: want ErrProtocol, got %v", wire, err)
		}
	}
}

func TestReadIntsReadsArraysAndErrors(t *testing.T) {
	r := NewReader(strings.NewReader("*2\r\n:1\r\n:999\r\n-ERR boom\r\n*1\r\n+no\r\n"))
	got, err := r.ReadInts(nil)
	if err != nil || !reflect.DeepEqual(got, []int64{1, 999}) {
		t.Fatalf("got %v, %v", got, err)
	}
	var re ReplyError
	if _, err := r.ReadInts(got); !errors.As(err, &re) || string(re) != "ERR boom" {
		t.Fatalf("want the error reply, got %v", err)
	}
	if _, err := r.ReadInts(got); !errors.Is(err, ErrProtocol) {
		t.Fatalf("want ErrProtocol for a non-integer element, got %v", err)
	}
}

func TestReadIntsAllocatesNothing(t *testing.T) {
	wire := bytes.Repeat([]byte("*2\r\n:1\r\n:12345\r\n"), 2000)
	r := NewReader(bytes.NewReader(wire))
	dst := make([]int64, 0, 4)
	if allocs := testing.AllocsPerRun(1000, func() { dst, _ = r.ReadInts(dst) }); allocs != 0 {
		t.Fatalf("ReadInts allocates %.1f times", allocs)
	}
}

func TestConnRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		v, err := NewReader(c).ReadValue()
		if err != nil || len(v.Array) != 2 || v.Array[0].Str != "ECHO" {
			return
		}
		_, _ = c.Write([]byte("$" + "5\r\n" + v.Array[1].Str + "\r\n"))
	}()
	c, err := Dial(ln.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Do("ECHO", "hello")
	if err != nil || v.Str != "hello" {
		t.Fatalf("got %+v, %v", v, err)
	}
	<-done
}
