//! The shard core's wake-up hand-shake (`src/shard/wake.rs`): a schedule into a shard the driver
//! has already looked at must wake the driver if its deadline is earlier than the tick the driver
//! goes to sleep until. Two shards (locks over their pending deadlines, standing in for a shard's
//! wheel) hold entries due at ticks 10 and 100 in the first; a look before the model published 10,
//! and the driver, woken at tick 10, takes that entry, looks at both shards, publishes, and sleeps
//! until woken (a sleep "until tick 100" that nothing cuts short is, for an entry due at 50, a
//! wake-up 50 ticks late: the model treats it as a sleep without end, so a missed wake is a
//! deadlock); the main thread schedules an entry due at 50 into the second shard meanwhile.

use delaywheel::loom_internals::WakeTick;
use loom::sync::Mutex;
use loom::thread;

/// The deadline of the entry scheduled during the driver's look.
const DUE: u64 = 50;

struct Core {
    word: WakeTick,
    shards: [Mutex<Vec<u64>>; 2],
}

impl Core {
    fn new() -> Core {
        let word = WakeTick::new();
        word.publish(Some(10));
        Core { word, shards: [Mutex::new(vec![10, 100]), Mutex::new(Vec::new())] }
    }

    /// The driver, at tick 10: takes what is due, looks at every shard and publishes the earliest
    /// tick left, until that is [`DUE`] (it has seen the new entry); between looks it sleeps until
    /// woken.
    fn drive(&self) {
        loop {
            self.word.before_look();
            let mut next: Option<u64> = None;
            for shard in &self.shards {
                let mut pending = shard.lock().unwrap();
                pending.retain(|&due| due > 10);
                next = pending.iter().copied().chain(next).min();
            }
            self.word.publish(next);
            if next == Some(DUE) {
                return;
            }
            thread::park();
        }
    }

    /// A schedule into the second shard, by the protocol when `read_first` is false; with it, the
    /// schedule reads the word before it takes the lock (what the protocol forbids).
    fn schedule(&self, read_first: bool) -> bool {
        let early_read = read_first && self.word.wakes_driver(DUE);
        let mut pending = self.shards[1].lock().unwrap();
        pending.push(DUE);
        let wake = if read_first { early_read } else { self.word.wakes_driver(DUE) };
        drop(pending);
        wake
    }
}

fn model(read_first: bool) {
    loom::model(move || {
        // Leaked, not in an `Arc`: an execution that deadlocks unwinds with the driver parked,
        // and dropping loom objects then would panic again and abort the test.
        let core: &'static Core = Box::leak(Box::new(Core::new()));
        let driver = thread::spawn(move || core.drive());
        if core.schedule(read_first) {
            driver.thread().unpark();
        }
        driver.join().unwrap();
        assert_eq!(core.word.get(), DUE, "the driver sleeps until the new entry's tick");
    });
}

/// The protocol: the driver always comes to sleep until tick 50, whatever the interleaving
/// (seeded fault `shard_wake_never_after_look`: the driver marks its look after it, and a
/// schedule behind the look reads the tick 10 of the look before).
#[test]
fn schedule_behind_the_look_wakes_the_driver() {
    model(false);
}

/// The read the protocol forbids (before the entry is linked): some interleaving leaves the driver
/// asleep past the deadline, which loom reports as a deadlock.
#[test]
#[should_panic(expected = "deadlock")]
fn schedule_reading_before_its_lock_can_leave_the_driver_asleep() {
    model(true);
}
