// The deadlines of one RedisStore's script calls in flight: one timer for all of them, armed for the earliest, instead of a timer set and cleared per call.

/** A call with a deadline: linked into its store's list while it waits for Redis. */
export interface Timed {
  /** performance.now() at its deadline. */
  until: number;
  /** Its neighbours in the list (undefined at either end, and once it left the list). */
  prev: Timed | undefined;
  next: Timed | undefined;
  /** Whether it is in the list now. */
  listed: boolean;
  /** Its deadline passed (the list has just dropped it): it fails, unless its answer is read first. */
  expire(): void;
}

/**
 * The calls of one store waiting for Redis, each with its own deadline. Node's setTimeout costs a
 * timer list made and dropped per call when calls come one at a time (each cleared before the
 * next is set), with a number-keyed property added and deleted in the timer module: about 2-4k
 * instructions a call. Here a call joins and leaves a linked list (no allocation, no hashing), and
 * one timer serves them all: armed for the earliest deadline when a call is added before it, and
 * when it fires, the calls past their deadline expire and it is armed again for the earliest left
 * (none left: not armed). A call that leaves early leaves the timer armed; it fires once and finds
 * nothing, so under steady traffic it fires about once per deadline, not once per call. The timer
 * keeps the process alive only while a call waits (ref'd then, unref'd when the list empties).
 * Each call still expires at its own deadline, as its own setTimeout would (the timer is armed for
 * the earliest one and every firing re-arms for the next).
 */
export class DeadlineList {
  private head: Timed | undefined = undefined;
  private tail: Timed | undefined = undefined;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** performance.now() the timer fires at; Infinity when not armed. */
  private armedFor = Infinity;
  private refed = false;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A call starts waiting; its deadline is `call.until`. */
  add(call: Timed): void {
    call.listed = true;
    call.next = undefined;
    call.prev = this.tail;
    if (this.tail) this.tail.next = call;
    else this.head = call;
    this.tail = call;
    if (call.until < this.armedFor) this.arm(call.until);
    else if (!this.refed) this.ref(true);
  }

  /** A call was answered (or failed) before its deadline: it leaves the list; the timer stays as it is. */
  remove(call: Timed): void {
    if (!call.listed) return;
    call.listed = false;
    if (call.prev) call.prev.next = call.next;
    else this.head = call.next;
    if (call.next) call.next.prev = call.prev;
    else this.tail = call.prev;
    call.prev = call.next = undefined;
    // Nothing waits: the armed timer must not hold the process open.
    if (this.head === undefined && this.refed) this.ref(false);
  }

  /** Calls waiting now (tests). */
  get size(): number {
    let n = 0;
    for (let c = this.head; c; c = c.next) n++;
    return n;
  }

  private ref(on: boolean): void {
    this.refed = on;
    // Optional calls: on Workers (workerd) setTimeout returns a number, with neither.
    const timer = this.timer as { ref?: () => void; unref?: () => void } | undefined;
    if (on) timer?.ref?.();
    else timer?.unref?.();
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(this.fire, Math.max(0, at - this.now()));
    this.refed = true;
  }

  /** The timer fired: every call past its deadline expires; the timer is armed again for the earliest left. */
  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = this.now();
    let earliest = Infinity;
    let c = this.head;
    while (c) {
      const next = c.next;
      if (c.until <= now) {
        this.remove(c);
        c.expire();
      } else if (c.until < earliest) earliest = c.until;
      c = next;
    }
    if (earliest !== Infinity) this.arm(earliest);
    else this.refed = false;
  };
}
