package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Overlap of reading and transforming. The reader goroutines (the
// caller's, and a second one on a fork pinned to the same snapshot, see
// writeRun) read the ONE consistent snapshot and copy each row into a
// batch; another goroutine transforms the batches in the order they are
// sent and writes the Parquet row groups. A fixed pool of batches bounds
// what is in flight (backpressure: a reader waits for a free batch), so
// memory does not grow with the data.
const (
	rowsPerBatch    = 512
	batchesInFlight = 8
)

// rowBatch is a run of source rows of one table, or (end set) the marker
// that the table is complete.
type rowBatch struct {
	rows, width int
	cells       []any
	apply       func([]any) error
	end         func() error
}

func (b *rowBatch) run() error {
	if b.end != nil {
		return b.end()
	}
	w := b.width
	for i := 0; i < b.rows; i++ {
		if err := b.apply(b.cells[i*w : (i+1)*w : (i+1)*w]); err != nil {
			return err
		}
	}
	return nil
}

// errTransformerStopped tells the reader to stop: the transformer failed
// (its error is the one reported).
var errTransformerStopped = errors.New("transformer stopped")

type overlap struct {
	work, free chan *rowBatch
	failed     chan struct{} // closed when the transformer stops on an error
	done       chan struct{} // closed when the transformer goroutine exits
	cancel     context.CancelCauseFunc
	err        error         // the transformer's error; read after done
	busy       time.Duration // the transformer's working time; read after done
	mu         sync.Mutex    // guards wait (two readers may wait at once)
	wait       time.Duration // the readers' time waiting for a free batch
	finished   bool
}

// startOverlap starts the transformer goroutine. The returned context is
// cancelled when the transformer fails, so the reader's query stops early.
func startOverlap(ctx context.Context) (*overlap, context.Context) {
	rctx, cancel := context.WithCancelCause(ctx)
	o := &overlap{
		work: make(chan *rowBatch, batchesInFlight), free: make(chan *rowBatch, batchesInFlight),
		failed: make(chan struct{}), done: make(chan struct{}), cancel: cancel,
	}
	for range batchesInFlight {
		o.free <- &rowBatch{}
	}
	go o.loop()
	return o, rctx
}

func (o *overlap) loop() {
	defer close(o.done)
	for b := range o.work {
		if o.err == nil {
			t0 := time.Now()
			o.err = b.run()
			o.busy += time.Since(t0)
			if o.err != nil {
				close(o.failed)
				o.cancel(errTransformerStopped)
			}
		}
		clear(b.cells) // drop references to the rows' strings
		*b = rowBatch{cells: b.cells[:0]}
		o.free <- b
	}
}

// get returns a free batch, waiting while all are in flight.
func (o *overlap) get() (*rowBatch, error) {
	select {
	case b := <-o.free:
		return b, nil
	default:
	}
	t0 := time.Now()
	defer func() {
		o.mu.Lock()
		o.wait += time.Since(t0)
		o.mu.Unlock()
	}()
	select {
	case b := <-o.free:
		return b, nil
	case <-o.failed:
		return nil, errTransformerStopped
	}
}

// send hands a batch to the transformer (never blocks: the work queue
// holds every batch there is).
func (o *overlap) send(b *rowBatch) error {
	select {
	case o.work <- b:
		return nil
	case <-o.failed:
		return errTransformerStopped
	}
}

// finish waits for the transformer to drain the queue and returns its
// error. It is idempotent.
func (o *overlap) finish() error {
	if !o.finished {
		o.finished = true
		close(o.work)
		<-o.done
		o.cancel(nil)
	}
	return o.err
}
