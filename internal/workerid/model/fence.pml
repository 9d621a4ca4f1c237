/*
 * The worker-id fence protocol as internal/workerid and cluster
 * implement it, for SPIN. docs/guarantees.md ("What is model-checked")
 * describes the model, its abstractions, the property and the bounds;
 * scripts/model.sh runs it.
 *
 * Every step that touches the registry is one atomic statement (the
 * registry is linearizable) and carries a comment
 *   @step NAME: GO FUNCTION: OPERATION
 * that ops.txt repeats for the steps of a scripted acquisition;
 * internal/workerid's TestModelOps checks that the Go code performs exactly
 * those registry operations, in that order, and that this file still names
 * them. Every step also prints one "@ WHO NAME k=v..." line, which is the
 * schedule a trail replays (internal/workerid's TestModelTrails).
 *
 * Variants (spin -D...): LEASE_ONLY (cluster.Config.UnsafeLeaseOnly: no fence,
 * no reservation, keep issuing on the old id until a new one is held),
 * IGNORE_FLOOR (UnsafeIgnoreFloor: the window starts at 0, not at the
 * previous holder's reservation), TRUST_ABSENT (UnsafeTrustAbsentFence: a
 * missing fence is a never-used id, floor 0). NOFAULTS turns the injected
 * registry faults off. N nodes, K worker ids, TMAX ticks of time.
 */

#ifndef N
#define N 2
#endif
#ifndef K
#define K 3
#endif
#ifndef TMAX
#define TMAX 3
#endif
/* W: the reservation ahead of the clock (cluster.Config.Reservation), in ticks. */
#ifndef W
#define W 2
#endif
/* SK: workerid.MaxClockSkew in ticks: every clock reads T + off[n], off in 0..SK. */
#ifndef SK
#define SK 1
#endif
/* ATT: sessions (acquisitions) per node. */
#ifndef ATT
#define ATT 2
#endif
/* STEPS: clock steps (back or forward, within SK) in a run. */
#ifndef STEPS
#define STEPS 2
#endif
/* MAXF: injected registry faults (lost responses, errors) in a run. */
#ifndef MAXF
#define MAXF 2
#endif
/* OPS: fences the operator deletes in a run. */
#ifndef OPS
#define OPS 1
#endif

#ifdef NOFAULTS
#define FAULTY false
#else
#define FAULTY true
#endif

#define NS   (N*ATT+1)           /* session ids 1..N*ATT; 0 is none */
#define TS   (TMAX+SK+W+1)       /* a stamp's tick is below TS */
#define FULL ((1<<K)-1)
#define CLOCK(n) (T + off[n])
#define CURFV(x) (fOK[x] -> fVer[x] : 0)

/* results of a registry call */
#define OK       1
#define LOSTRESP 2  /* fault.Action.LoseResponse: applied, the caller gets an error */
#define FAILED   3  /* fault.Action.Err: not applied, the caller gets an error */
#define EXPIRED  4  /* registry.ErrSessionExpired */
#define CONFRES  5  /* a condition failed on the reservation */
#define CONFFEN  6  /* ... on the fence */
#define CONFNODE 7  /* ... on the worker_id node */
#define CONFLED  8  /* ... on the ledger */
#define LOST     9  /* workerid.ErrLost */
#define UNKNOWN 10  /* any other error: outcome unknown */

/* ---- the registry: linearizable, with sessions and compare-and-set ---- */
/* Versions count the writes of each key and never repeat for a key, as
 * registry.Version promises (a commit's keys share one etcd revision; only
 * equality matters). */
byte resSess[K];       /* /reservation/worker_id/{w}: owning session, 0 absent */
byte resVer[K];
bool fOK[K];           /* /reservation/worker_id_fence/{w} exists */
byte fEpoch[K];
byte fHolder[K];       /* node index + 1; 0 for the ledger's fences */
byte fR[K];            /* reservedUntil */
byte fVer[K];
byte wnSess[N];        /* /nodes/compute_nodes/worker_id/{n}: owning session */
byte wnVer[N];
bool alive[NS];        /* the registry's view of each session */
byte nalive;
/* the ledger (/reservation/worker_id_ledger) exists from the start */

/* ---- the world ---- */
byte T;                /* true time, ticks */
byte off[N];           /* each node's clock offset, 0..SK */
byte steps;            /* clock steps made */
byte ops;              /* fences the operator deleted */
bool fDel[K];          /* ghost: the operator deleted this fence at some point */
byte maxEp;            /* ghost: the highest epoch ever written */
byte faults;           /* injected registry faults so far */

/* ---- each node's key generator (snowflake.Generator, n.gen) ---- */
bool gOn[N];           /* n.gen holds a generator that is not revoked */
byte gSid[N];          /* the holding (session) it issues for: the holder */
byte gFl[N];           /* SetWindow's floor */
byte gLim[N];          /* SetWindow's limit */

/* ---- what each holder (session) stamped: ticks hFirst..hLast on hW ---- */
byte hW[NS];
bool hOn[NS];          /* it stamped a key */
byte hFirst[NS];
byte hLast[NS];

/* the session ends (closed or expired): its ephemerals go, their versions
 * count on (a key created again gets a new one) */
#define DROPRES(s, x) if :: x < K && resSess[x] == s -> resSess[x] = 0 :: else fi
#define DROPWN(s, x)  if :: x < N && wnSess[x] == s -> wnSess[x] = 0 :: else fi
inline closeSession(s) {
	if
	:: alive[s] ->
		alive[s] = false;
		nalive--;
		DROPRES(s, 0); DROPRES(s, 1); DROPRES(s, 2); DROPRES(s, 3);
		DROPWN(s, 0); DROPWN(s, 1); DROPWN(s, 2); DROPWN(s, 3)
	:: else
	fi
}

/* snowflake.Generator.fill/plan: t = max(clock, last); it waits while
 * t <= floor or t > limit (no window with LEASE_ONLY: plain Snowflake). */
#define TSOF(n) ((hOn[gSid[n]] && hLast[gSid[n]] > CLOCK(n)) -> hLast[gSid[n]] : CLOCK(n))
#ifdef LEASE_ONLY
#define STAMPABLE(n) (gOn[n])
#else
#define STAMPABLE(n) (gOn[n] && TSOF(n) > gFl[n] && TSOF(n) <= gLim[n])
#endif

/*
 * The property, checked at every stamp: the ticks two holders of one
 * worker id stamped never overlap, not even as ranges (first..last), which
 * implies that no two holders stamp the same (worker id, ms); and within one
 * holder the stamps never go back (so, with the generator's sequence, a key
 * never repeats).
 */
proctype gen(byte n) {
	byte ts, s, o;
end_gen:
	do
	:: d_step {
		/* @step stamp: snowflake.Generator.NextID: (no registry call) */
		STAMPABLE(n) && (!hOn[gSid[n]] || TSOF(n) != hLast[gSid[n]]) ->
		s = gSid[n];
		ts = TSOF(n);
		printf("@ %d stamp w=%d ts=%d s=%d\n", n, hW[s], ts, s);
		assert(!hOn[s] || ts >= hLast[s]);
		if :: !hOn[s] -> hOn[s] = true; hFirst[s] = ts :: else fi;
		hLast[s] = ts;
		o = 1;
		do
		:: o < NS ->
#ifdef PROBE_TAKEOVER
			/* vacuity probe (scripts/model.sh): two holders of one id both stamp */
			assert(o == s || !hOn[o] || hW[o] != hW[s]);
#endif
			assert(o == s || !hOn[o] || hW[o] != hW[s] || hLast[o] < hFirst[s] || hFirst[o] > hLast[s]);
			o++
		:: else -> break
		od;
		s = 0; ts = 0; o = 0
	}
	od
}

/* the node's program counter: the registry call it makes next */
#define P_START       1  /* session */
#define P_CHILDREN    2  /* children */
#define P_CHOOSE      3  /* getfence */
#define P_CLAIM       4  /* claim */
#define P_CLAIMUNUSED 5  /* claim-unused */
#define P_WRITE       6  /* reserve */
#define P_ADOPTF      7  /* adopt-fence */
#define P_ADOPTR      8  /* adopt-res */
#define P_REGISTER    9  /* register */
#define P_HOLD       10  /* hold: renew, watch, sessdone, ensureledger, leave */
#define P_CLOSE      11  /* close */
#define P_LEAVECLOSE 12  /* leave-close */
#define P_DONE       13

#ifdef IGNORE_FLOOR
#define SETWINDOW gFl[n] = 0; gLim[n] = R
#else
#define SETWINDOW gFl[n] = fl; gLim[n] = R
#endif

/* cluster.Node.hold and cluster.Node.acquire after Holding.Reserve or Release
 * (ret 1, 0, 2) returned res */
#define AFTER_RESERVE \
	if \
	:: ret == 0 && res == OK -> SETWINDOW; pc = P_REGISTER \
	:: ret == 0 && res != OK -> pc = P_CLOSE \
	:: ret == 1 && res == OK -> SETWINDOW; pc = P_HOLD \
	:: ret == 1 && res == UNKNOWN -> pc = P_HOLD \
	:: ret == 1 && res == LOST -> gOn[n] = false; NOSPURIOUS; pc = P_CLOSE \
	:: ret == 2 -> pc = P_LEAVECLOSE \
	fi; \
	until = 0; afv = 0; afr = 0

/* progress: a holder whose session lives, whose fence no operator deleted,
 * and whose adopt reads did not fail, is never told it lost its worker id */
#define NOSPURIOUS assert(!alive[sid] || fDel[w] || readFault)

/* workerid.occupancy.resolve, on the fence just read */
#ifdef TRUST_ABSENT
#define RESOLVE(x) \
	if \
	:: fOK[x] -> fl = fR[x]; ep = fEpoch[x] + 1 \
	:: else -> fl = 0; ep = 1 \
	fi; \
	pc = P_CLAIM
#else
#define RESOLVE(x) \
	if \
	:: fOK[x] -> fl = fR[x]; ep = fEpoch[x] + 1; pc = P_CLAIM \
	:: !fOK[x] && !ledgerKnown -> pc = P_CLAIMUNUSED \
	:: !fOK[x] && ledgerKnown -> fl = CLOCK(n) + W + SK; ep = 0; pc = P_CLAIM \
	fi
#endif

/* Symmetry: ids that were never touched (never reserved, fence at epoch 0
 * and version 1) are interchangeable, so only the lowest of them is a
 * candidate; every id that was touched is. */
#define PRISTINE(x) (x < K && resVer[x] == 0 && fOK[x] && fVer[x] == 1)
#define FIRSTOFKIND(x) (!PRISTINE(x) || ((x < 1 || !PRISTINE(0)) && (x < 2 || !PRISTINE(1)) && (x < 3 || !PRISTINE(2))))

/* The claim reads its candidates' fences in one request and tries them in
 * one CommitFirst (workerid.Acquire). A GetMany of k fences is k getfence
 * steps here, each at its own instant (an over-approximation: reading them
 * all at one instant is one of its interleavings); CommitFirst is the claim
 * step below on one of them (see there).
 * @step getfence: workerid.occupancy.readFences: getmany /reservation/worker_id_fence/{id} */
#define GETFENCE(x) \
	:: d_step { \
		pc == P_CHOOSE && x < K && ((view >> x) & 1) == 0 && FIRSTOFKIND(x) -> \
		c = x; fv0 = CURFV(x); \
		printf("@ %d getfence w=%d present=%d R=%d\n", n, x, fOK[x], fR[x]); \
		RESOLVE(x) \
	}

#define CLAIMCONDS (alive[sid] && resSess[c] == 0 && CURFV(c) == fv0 && wnSess[n] == 0)
#define CLAIMAPPLY \
	if :: ep == 0 -> ep = maxEp + 1 :: else fi; \
	resSess[c] = sid; resVer[c]++; \
	fOK[c] = true; fEpoch[c] = ep; fHolder[c] = n + 1; fR[c] = fl; fVer[c]++; \
	wnSess[n] = sid; wnVer[n]++; \
	if :: ep > maxEp -> maxEp = ep :: else fi

#define WRITECONDS (alive[sid] && CURFV(w) == fv && resSess[w] != 0 && resVer[w] == rv)
#define WRITEAPPLY fEpoch[w] = ep; fHolder[w] = n + 1; fR[w] = until; fVer[w]++

proctype node(byte n) {
	byte pc = P_START;
	byte att, sid, view, c, fv0, fl, ep, w, fv, rv, nv, R, until, ret, res, afv, afr;
	bool ledgerKnown, readFault;

	do
	/* @step session: cluster.Node.acquire: session / */
	:: d_step {
		pc == P_START ->
		att++; sid = n*ATT + att; alive[sid] = true; nalive++;
		printf("@ %d session s=%d\n", n, sid);
		pc = P_CHILDREN
	   }

	/* @step children: workerid.readOccupancy: children /reservation/worker_id */
	:: d_step {
		pc == P_CHILDREN ->
		view = (resSess[0] != 0 -> 1 : 0) | (K > 1 && resSess[1] != 0 -> 2 : 0) |
		       (K > 2 && resSess[2] != 0 -> 4 : 0) | (K > 3 && resSess[3] != 0 -> 8 : 0);
		printf("@ %d children view=%d\n", n, view);
		pc = P_CHOOSE
	   }
	:: d_step { (pc == P_CHILDREN || pc == P_CHOOSE) && FAULTY && faults < MAXF -> faults++; printf("@ %d readerror\n", n); pc = P_CLOSE }
	/* workerid.occupancy.choose: every id free in the view is a candidate */
	:: d_step { pc == P_CHOOSE && view == FULL -> printf("@ %d exhausted\n", n); pc = P_CLOSE }
	GETFENCE(0)
	GETFENCE(1)
	GETFENCE(2)
	GETFENCE(3)

	/* registry.CommitFirst of the candidates' claims: it applies, atomically,
	 * one alternative whose conditions all hold (the first) or none; each
	 * alternative has exactly these conditions and writes. Here: the claim of
	 * a candidate chosen nondeterministically among those whose fence was
	 * read, applied atomically if its conditions hold; the code's outcomes
	 * are a subset of these (it fixes the choice: the first that holds).
	 * @step claim: workerid.Acquire: commitfirst if(res absent, fence at version, worker_id absent) put(res ephemeral, fence, worker_id ephemeral) */
	:: d_step {
		pc == P_CLAIM && CLAIMCONDS ->
		CLAIMAPPLY;
		printf("@ %d claim w=%d ep=%d floor=%d res=ok\n", n, c, ep, fl);
		w = c; fv = fVer[c]; rv = resVer[c]; nv = wnVer[n]; R = fl;
		/* progress: a new holder waits for its floor at most W + 2 MaxClockSkew of true time */
		assert(fl <= T + W + 2*SK);
		view = 0; c = 0; fv0 = 0;
#ifdef LEASE_ONLY
		pc = P_REGISTER
#else
		/* cluster.Node.reserve: the first reservation, before any key */
		until = CLOCK(n) + W; ret = 0;
		if
		:: until <= R -> res = OK; AFTER_RESERVE
		:: else -> pc = P_WRITE
		fi
#endif
	   }
	:: d_step {
		pc == P_CLAIM && CLAIMCONDS && FAULTY && faults < MAXF ->
		faults++; CLAIMAPPLY;
		printf("@ %d claim w=%d ep=%d floor=%d res=lostresponse\n", n, c, ep, fl);
		pc = P_CLOSE
	   }
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && FAULTY && faults < MAXF -> faults++; printf("@ %d claim w=%d res=error\n", n, c); pc = P_CLOSE }
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && !alive[sid] -> printf("@ %d claim w=%d res=expired\n", n, c); pc = P_CLOSE }
	/* a race lost: pick another id from the view, or read it again */
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && alive[sid] && resSess[c] != 0 -> printf("@ %d claim w=%d res=taken\n", n, c); view = view | (1 << c); pc = P_CHOOSE }
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && alive[sid] && resSess[c] != 0 -> printf("@ %d claim w=%d res=taken\n", n, c); pc = P_CHILDREN }
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && alive[sid] && resSess[c] == 0 && CURFV(c) != fv0 -> printf("@ %d claim w=%d res=fencemoved\n", n, c); pc = P_CHILDREN }
	:: d_step { (pc == P_CLAIM || pc == P_CLAIMUNUSED) && alive[sid] && resSess[c] == 0 && CURFV(c) == fv0 && wnSess[n] != 0 -> assert(false) }
	/* @step claim-unused: workerid.Acquire: commitfirst if(res absent, fence absent, worker_id absent, ledger absent) put(res ephemeral, fence, worker_id ephemeral) */
	:: d_step {
		pc == P_CLAIMUNUSED && CLAIMCONDS ->
		/* the ledger exists: the fence was deleted, its floor is unknown */
		printf("@ %d claim-unused w=%d res=ledger\n", n, c);
		ledgerKnown = true; pc = P_CHOOSE
	   }

#ifndef LEASE_ONLY
	/* @step reserve: workerid.Holding.write: commit if(fence at version, res at version) put(fence) */
	:: d_step {
		pc == P_WRITE && WRITECONDS ->
		WRITEAPPLY; fv = fVer[w]; R = until; res = OK;
		printf("@ %d reserve w=%d until=%d res=ok\n", n, w, until);
		AFTER_RESERVE
	   }
	:: d_step {
		pc == P_WRITE && WRITECONDS && FAULTY && faults < MAXF ->
		faults++; WRITEAPPLY; res = UNKNOWN;
		printf("@ %d reserve w=%d until=%d res=lostresponse\n", n, w, until);
		AFTER_RESERVE
	   }
	:: d_step {
		pc == P_WRITE && FAULTY && faults < MAXF ->
		faults++; res = UNKNOWN;
		printf("@ %d reserve w=%d until=%d res=error\n", n, w, until);
		AFTER_RESERVE
	   }
	:: d_step {
		pc == P_WRITE && !alive[sid] ->
		res = LOST;
		printf("@ %d reserve w=%d until=%d res=expired\n", n, w, until);
		AFTER_RESERVE
	   }
	:: d_step {
		pc == P_WRITE && alive[sid] && !WRITECONDS ->
		printf("@ %d reserve w=%d until=%d res=conflict\n", n, w, until);
		pc = P_ADOPTF
	   }
	/* @step adopt-fence: workerid.Holding.adopt: get /reservation/worker_id_fence/{id} */
	:: d_step {
		pc == P_ADOPTF ->
		printf("@ %d adopt-fence\n", n);
		if
		:: fOK[w] && fEpoch[w] == ep && fHolder[w] == n + 1 && fVer[w] != fv -> afv = fVer[w]; afr = fR[w]; pc = P_ADOPTR
		:: else -> res = LOST; AFTER_RESERVE
		fi
	   }
	/* @step adopt-res: workerid.Holding.adopt: get /reservation/worker_id/{id} */
	:: d_step {
		pc == P_ADOPTR ->
		printf("@ %d adopt-res\n", n);
		if
		:: resSess[w] != 0 && resVer[w] == rv ->
			fv = afv; if :: afr > R -> R = afr :: else fi;
			afv = 0; afr = 0; pc = P_WRITE /* write(until) again */
		:: else -> res = LOST; AFTER_RESERVE
		fi
	   }
	:: d_step { (pc == P_ADOPTF || pc == P_ADOPTR) && FAULTY && faults < MAXF -> faults++; readFault = true; printf("@ %d adopt-error\n", n); res = LOST; AFTER_RESERVE }
#endif

	/* @step register: cluster.Node.register: put-ephemeral /nodes/compute_nodes/status/{instance} */
	:: d_step {
		pc == P_REGISTER && alive[sid] ->
		/* n.gen.Store(gen): a new generator for this holding */
		gOn[n] = true; gSid[n] = sid; hW[sid] = w;
		/* cluster.Node.ensureLedger (in the background; here at once):
		 * workerid.EnsureLedger finds the ledger, the node has seen it */
		ledgerKnown = true;
		printf("@ %d register\n", n);
		res = 0; ret = 0;
		pc = P_HOLD
	   }
	:: d_step { pc == P_REGISTER && !alive[sid] -> printf("@ %d register res=expired\n", n); pc = P_CLOSE }

	/* cluster.Node.hold */
#ifndef LEASE_ONLY
	/* the ticker: cluster.Node.reserve (a renewal that would not raise the limit writes nothing) */
	:: d_step { pc == P_HOLD && CLOCK(n) + W > R -> until = CLOCK(n) + W; ret = 1; pc = P_WRITE }
	/* an event on the fence, the reservation or the worker_id node:
	 * @step watch: workerid.Holding.Watch: watch /reservation/worker_id_fence/{id} */
	/* @step watch: workerid.Holding.Watch: watch /reservation/worker_id/{id} */
	/* @step watch: workerid.Holding.Watch: watch /nodes/compute_nodes/worker_id/{instance} */
	:: d_step {
		pc == P_HOLD && (!fOK[w] || fEpoch[w] != ep || fHolder[w] != n + 1 || resSess[w] == 0 || resVer[w] != rv || wnSess[n] == 0 || wnVer[n] != nv) ->
		gOn[n] = false; /* cluster.Node.watch: hold.gen.Revoke */
		printf("@ %d watch\n", n);
		NOSPURIOUS;
		pc = P_CLOSE
	   }
#endif
	/* @step sessdone: cluster.Node.hold: (sess.Done closed) */
	:: d_step {
		pc == P_HOLD && !alive[sid] ->
#ifndef LEASE_ONLY
		gOn[n] = false; /* hold.gen.Revoke */
#endif
		printf("@ %d sessdone\n", n);
		pc = P_CLOSE
	   }
	/* cluster.Node.Close: hold.gen.Revoke, then Holding.Release: lower the fence to
	 * the last key (not below the floor), by the reserve step's write:
	 * @step release: workerid.Holding.Release: commit if(fence at version, res at version) put(fence) */
	:: d_step {
		pc == P_HOLD ->
		printf("@ %d leave\n", n);
		gOn[n] = false;
#ifdef LEASE_ONLY
		pc = P_LEAVECLOSE
#else
		until = ((hOn[sid] && hLast[sid] > fl) -> hLast[sid] : fl);
		ret = 2;
		if
		:: until < R -> pc = P_WRITE
		:: else -> until = 0; pc = P_LEAVECLOSE
		fi
#endif
	   }

	/* @step close: cluster.Node.run: session-close / */
	:: d_step {
		pc == P_CLOSE ->
		closeSession(sid);
		printf("@ %d close s=%d\n", n, sid);
		view = 0; c = 0; fv0 = 0; fl = 0; ep = 0; w = 0; fv = 0; rv = 0; nv = 0; R = 0;
		until = 0; ret = 0; res = 0; afv = 0; afr = 0; readFault = false;
		pc = (att < ATT -> P_START : P_DONE)
	   }
	/* @step leave-close: cluster.Node.Close: session-close / */
	:: d_step {
		pc == P_LEAVECLOSE ->
		closeSession(sid);
		printf("@ %d close s=%d\n", n, sid);
		pc = P_DONE
	   }
	:: pc == P_DONE -> break
	od
}

/* the registry expires a session (memory.Expire) */
#define EXPIRE(x) :: d_step { x < NS && alive[x] -> closeSession(x); printf("@ env expire s=%d\n", x) }
/* a clock steps (back or forward, within the skew bound) */
#define STEP(m, x) :: d_step { m < N && x <= SK && steps < STEPS && off[m] != x -> steps++; off[m] = x; printf("@ env clock n=%d off=%d\n", m, x) }
/* an operator deletes a fence */
#define DELFENCE(x) :: d_step { x < K && ops < OPS && fOK[x] -> ops++; fOK[x] = false; fDel[x] = true; printf("@ env delfence w=%d\n", x) }

proctype env() {
end_env:
	do
	:: d_step { T < TMAX -> T++; printf("@ env tick T=%d\n", T) }
	STEP(0, 0) STEP(0, 1) STEP(0, 2) STEP(1, 0) STEP(1, 1) STEP(1, 2) STEP(2, 0) STEP(2, 1) STEP(2, 2)
	EXPIRE(1) EXPIRE(2) EXPIRE(3) EXPIRE(4) EXPIRE(5) EXPIRE(6) EXPIRE(7) EXPIRE(8) EXPIRE(9)
	DELFENCE(0) DELFENCE(1) DELFENCE(2) DELFENCE(3)
	od
}

init {
	byte i;
	atomic {
		/* a ledgered cluster: every fence exists at epoch 0 (workerid.EnsureLedger) */
		i = 0;
		do
		:: i < K -> fOK[i] = true; fVer[i] = 1; i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < N -> run node(i); run gen(i); i++
		:: else -> break
		od;
		run env()
	}
}
