// Command minigo does nothing: the instructions of a Go program's start-up
// and exit, which make bench's tool table subtracts from each purerdma tool
// (as it subtracts /bin/true's from each C tool).
package main

func main() {}
