package greet

import "testing"

func TestHello(t *testing.T) {
	cases := map[string]string{"": "Hello, world!", "  Ada ": "Hello, Ada!"}
	for name, want := range cases {
		if got := Hello(name); got != want {
			t.Errorf("Hello(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestShout(t *testing.T) {
	if got := Shout("ada"); got != "HELLO, ADA!" {
		t.Errorf("Shout(%q) = %q", "ada", got)
	}
}
