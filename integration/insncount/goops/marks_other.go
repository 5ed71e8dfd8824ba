//go:build !amd64

package main

// The marker instruction is x86's: elsewhere the program builds (make
// cross builds every package) and its windows count nothing.

func start()  {}
func stop1()  {}
func stop2()  {}
func stop3()  {}
func stop4()  {}
func stop5()  {}
func stop6()  {}
func stop7()  {}
func stop8()  {}
func stop9()  {}
func stop10() {}
func stop11() {}
func stop12() {}
func stop13() {}
func stop14() {}
func stop15() {}
func stop16() {}
func stop17() {}
func stop18() {}
func stop63() {}
