//go:build linux

package keyserver

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// A minimal io_uring (Linux 5.11 and later), in pure Go over the raw
// system calls: one submission queue and one completion queue mapped into
// the process, used by one locked thread. Only what the key server needs:
// recv, send and read.

const (
	sysIOUringSetup = 425 // the same number on every Linux architecture
	sysIOUringEnter = 426

	opRead = 22
	opSend = 26
	opRecv = 27

	setupCQSize        = 1 << 3
	setupSingleIssuer  = 1 << 12
	setupDeferTaskrun  = 1 << 13
	featSingleMmap     = 1 << 0
	featNoDrop         = 1 << 1
	featExtArg         = 1 << 8
	enterGetEvents     = 1 << 0
	enterExtArg        = 1 << 3
	offSQRing          = 0
	offCQRing          = 0x8000000
	offSQEs            = 0x10000000
	msgNoSignal        = 0x4000
	getEventsArgSize   = 24
	uringSQEntries     = 1024
	uringCQEntries     = 8192
	uringSQESize       = 64
	uringCQESize       = 16
	uringParamsSize    = 120
	uringSQOffsetsSize = 40
)

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	bufIndex uint16
	_        uint16
	_        int32
	_        [2]uint64
}

// cqe is struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// The layouts above must match the kernel's: these fail to compile when
// a size differs.
var (
	_ [unsafe.Sizeof(uringParams{}) - uringParamsSize]byte
	_ [uringParamsSize - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(sqOffsets{}) - uringSQOffsetsSize]byte
	_ [uringSQOffsetsSize - unsafe.Sizeof(sqOffsets{})]byte
	_ [unsafe.Sizeof(sqe{}) - uringSQESize]byte
	_ [uringSQESize - unsafe.Sizeof(sqe{})]byte
	_ [unsafe.Sizeof(cqe{}) - uringCQESize]byte
	_ [uringCQESize - unsafe.Sizeof(cqe{})]byte
	_ [unsafe.Sizeof(getEventsArg{}) - getEventsArgSize]byte
	_ [getEventsArgSize - unsafe.Sizeof(getEventsArg{})]byte
)

// ring is one io_uring. Not safe for concurrent use: with
// IORING_SETUP_SINGLE_ISSUER only the thread that created it may submit.
type ring struct {
	fd                   int
	sqMem, cqMem, sqeMem []byte
	sqHead, sqTail       *uint32
	sqMask, sqEntries    uint32
	sqes                 []sqe
	cqHead, cqTail       *uint32
	cqMask               uint32
	cqes                 []cqe
	tail                 uint32 // local submission tail, published by enter
}

// errNoUring says the kernel has no usable io_uring (too old, disabled by
// kernel.io_uring_disabled, or forbidden by seccomp).
var errNoUring = errors.New("io_uring not available")

// newRing sets up a ring on the calling thread.
func newRing() (*ring, error) {
	var (
		p   uringParams
		fd  uintptr
		err syscall.Errno
	)
	// Single issuer with deferred task work: completions are processed
	// only when this thread asks for them, not by interrupting it.
	for _, flags := range []uint32{setupCQSize | setupSingleIssuer | setupDeferTaskrun, setupCQSize} {
		p = uringParams{flags: flags, cqEntries: uringCQEntries}
		fd, _, err = syscall.Syscall(sysIOUringSetup, uringSQEntries, uintptr(unsafe.Pointer(&p)), 0)
		if err != syscall.EINVAL {
			break
		}
	}
	if err != 0 {
		return nil, fmt.Errorf("%w: io_uring_setup: %v", errNoUring, err)
	}
	r := &ring{fd: int(fd)}
	if p.features&featExtArg == 0 || p.features&featNoDrop == 0 {
		r.close()
		return nil, fmt.Errorf("%w: kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11)", errNoUring)
	}
	var merr error
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*uringCQESize
	if r.sqMem, merr = mmapRing(r.fd, offSQRing, sqSize); merr != nil {
		r.close()
		return nil, merr
	}
	if r.cqMem, merr = mmapRing(r.fd, offCQRing, cqSize); merr != nil {
		r.close()
		return nil, merr
	}
	if r.sqeMem, merr = mmapRing(r.fd, offSQEs, int(p.sqEntries)*uringSQESize); merr != nil {
		r.close()
		return nil, merr
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail = u32(r.sqMem, p.sqOff.head), u32(r.sqMem, p.sqOff.tail)
	r.sqMask, r.sqEntries = *u32(r.sqMem, p.sqOff.ringMask), p.sqEntries
	r.cqHead, r.cqTail = u32(r.cqMem, p.cqOff.head), u32(r.cqMem, p.cqOff.tail)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	// Submission slot i always holds SQE i.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func mmapRing(fd int, off int64, size int) ([]byte, error) {
	b, err := syscall.Mmap(fd, off, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	return b, nil
}

// close unmaps the ring and closes it; the kernel cancels what is still in
// flight.
func (r *ring) close() {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.sqMem} {
		if m != nil {
			_ = syscall.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	_ = syscall.Close(r.fd)
}

// next returns a zeroed submission entry, or nil when the queue is full
// (submit, then try again).
func (r *ring) next() *sqe {
	if r.tail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		return nil
	}
	e := &r.sqes[r.tail&r.sqMask]
	*e = sqe{}
	r.tail++
	return e
}

// enter submits every queued entry and, when wait is positive, waits up
// to wait milliseconds for at least one completion. A timeout is not an
// error.
func (r *ring) enter(waitMillis int) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	submit := r.tail - atomic.LoadUint32(r.sqHead)
	var (
		flags, minComplete uintptr
		arg                getEventsArg
		ts                 syscall.Timespec
	)
	if waitMillis > 0 {
		ts = syscall.NsecToTimespec(int64(waitMillis) * 1e6)
		arg.ts = uint64(uintptr(unsafe.Pointer(&ts)))
		flags, minComplete = enterGetEvents|enterExtArg, 1
	} else if submit == 0 {
		return nil
	}
	_, _, errno := syscall.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(submit), minComplete, flags,
		uintptr(unsafe.Pointer(&arg)), getEventsArgSize)
	switch errno {
	case 0, syscall.ETIME, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY:
		// EAGAIN and EBUSY: completions are backed up; reaping them
		// lets the next call through.
		return nil
	}
	return fmt.Errorf("io_uring_enter: %w", errno)
}

// reap calls f for each completion there is, in order.
func (r *ring) reap(f func(userData uint64, res int32)) {
	head := atomic.LoadUint32(r.cqHead)
	for {
		tail := atomic.LoadUint32(r.cqTail)
		if head == tail {
			return
		}
		for ; head != tail; head++ {
			c := r.cqes[head&r.cqMask]
			// Release the slot before f, which may submit more.
			atomic.StoreUint32(r.cqHead, head+1)
			f(c.userData, c.res)
		}
	}
}
