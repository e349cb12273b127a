// Package greet builds greetings.
package greet

import "strings"

// Hello returns a greeting for name. REQ-1: an empty name greets the world.
func Hello(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "world" // REQ-1
	}
	return "Hello, " + name + "!"
}

// Shout returns the greeting in capitals. REQ-2: shouting keeps the punctuation.
func Shout(name string) string {
	return strings.ToUpper(Hello(name))
}
