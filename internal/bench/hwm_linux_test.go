package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPeakRSSIsTheChilds: a child's peak RSS is its own, not its parent's
// (wait4's ru_maxrss alone reported the parent's 1.4 GiB for every child
// after the parent grew).
func TestPeakRSSIsTheChilds(t *testing.T) {
	if os.Getenv("KX_BENCH_HWM_CHILD") == "1" {
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = 1
		}
		time.Sleep(300 * time.Millisecond)
		if b[len(b)-1] != 1 {
			os.Exit(1)
		}
		return
	}
	// The parent grows well past the child.
	big := make([]byte, 400<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPeakRSSIsTheChilds$")
	cmd.Env = append(os.Environ(), "KX_BENCH_HWM_CHILD=1")
	p, err := runProc(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if big[0] != 1 {
		t.Fatal("unreachable")
	}
	if p.MaxRSS < 64<<20 || p.MaxRSS > 300<<20 {
		t.Fatalf("child's peak RSS %d MiB, want between 64 and 300 MiB (the parent holds 400)", p.MaxRSS>>20)
	}
	t.Logf("child's peak RSS %d MiB", p.MaxRSS>>20)
}

func TestVmHWM(t *testing.T) {
	if got := vmHWM([]byte("Name:\tx\nVmPeak:\t 10 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1 kB\n")); got != 2048*1024 {
		t.Errorf("vmHWM = %d", got)
	}
	if got := vmHWM([]byte("Name:\tzombie\nState:\tZ\n")); got != 0 {
		t.Errorf("vmHWM of a zombie = %d", got)
	}
}
