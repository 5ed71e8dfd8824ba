//go:build amd64

package main

// The markers, in marks_amd64.s: start opens a window on this CPU, stopN
// closes it as sample 64+N (N is cops's code for the same operation; 63
// is a sample that found nothing to poll or receive).

func start()
func stop1()
func stop2()
func stop3()
func stop4()
func stop5()
func stop6()
func stop7()
func stop8()
func stop9()
func stop10()
func stop11()
func stop12()
func stop13()
func stop14()
func stop15()
func stop16()
func stop17()
func stop18()
func stop63()
