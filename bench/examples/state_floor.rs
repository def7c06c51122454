//! The floor under SPEC W4s's size ratio: what the captured state of 1,000,000 tasks costs by itself,
//! with no timer. For each size (8, 64 and 256 bytes) it maps fresh memory for the state
//! (`MAP_POPULATE`, as the task slab maps its chunks), writes each task's words in schedule order, and
//! reads them back in firing order (a random permutation, as W4's deadlines give), prefetching 16
//! tasks ahead as the fire loop does. It prints the process CPU milliseconds of each step, three rounds
//! (the first round of a fresh process also pays the host's first touch of memory it never gave this
//! system before: on a virtual machine that is most of it).
//!
//! ```sh
//! cargo run --release -p delaywheel-bench --example state_floor
//! ```

#[cfg(target_os = "linux")]
fn main() {
    const N: usize = 1_000_000;
    let order = firing_order(N);
    for round in 1..=3 {
        let rows = [floor::<1>(N, &order), floor::<8>(N, &order), floor::<32>(N, &order)];
        let cells: Vec<String> = rows
            .iter()
            .map(|f| {
                format!("{} B: map {:.0} ms, write {:.0} ms, read {:.0} ms", f.bytes, f.map, f.write, f.read)
            })
            .collect();
        println!("round {round}: {}", cells.join(" | "));
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("state_floor maps memory with MAP_POPULATE: Linux only");
}

/// CPU milliseconds of each step for one size.
#[cfg(target_os = "linux")]
struct Floor {
    bytes: usize,
    map: f64,
    write: f64,
    read: f64,
}

/// A random permutation of `0..n` (xorshift, fixed seed: the same order every run).
#[cfg(target_os = "linux")]
fn firing_order(n: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// `n` tasks' state of `W` words: mapped, written, read back in `order`.
#[cfg(target_os = "linux")]
fn floor<const W: usize>(n: usize, order: &[u32]) -> Floor {
    use delaywheel_bench::process_cpu_ms;
    let bytes = n * W * 8;
    let start = process_cpu_ms();
    // SAFETY: a fresh private anonymous mapping at an address of the kernel's choosing; checked below.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    assert_ne!(at, libc::MAP_FAILED, "mmap of {bytes} bytes");
    // SAFETY: `bytes` of zeroed memory, ours alone until the `munmap` below, aligned to a page (more
    // than a `u64` needs); all-zero words are valid `[u64; W]`s.
    let states = unsafe { std::slice::from_raw_parts_mut(at.cast::<[u64; W]>(), n) };
    let mapped = process_cpu_ms();
    for (i, state) in states.iter_mut().enumerate() {
        for (w, word) in state.iter_mut().enumerate() {
            *word = i as u64 ^ w as u64;
        }
    }
    let written = process_cpu_ms();
    let mut sum = 0u64;
    for (k, &task) in order.iter().enumerate() {
        if let Some(&ahead) = order.get(k + 16) {
            prefetch(&states[ahead as usize]);
        }
        sum = states[task as usize].iter().fold(sum, |sum, &word| sum.wrapping_add(word));
    }
    std::hint::black_box(sum);
    let read = process_cpu_ms();
    // SAFETY: the whole mapping made above, unmapped once; `states` is not used past here.
    unsafe { libc::munmap(at, bytes) };
    Floor { bytes: W * 8, map: mapped - start, write: written - mapped, read: read - written }
}

/// Asks for every cache line of `state` ahead of its read (x86-64; elsewhere nothing).
#[cfg(target_os = "linux")]
#[inline]
fn prefetch<T>(state: &T) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..std::mem::size_of::<T>()).step_by(64) {
        // SAFETY: a prefetch hint for an address inside `state`; it reads nothing and cannot fault.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                (state as *const T).cast::<i8>().add(line),
                std::arch::x86_64::_MM_HINT_T0,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = state;
}
