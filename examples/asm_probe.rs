#[inline(never)]
pub fn sp(m: &syncprof::Mutex<u64>) {
    *m.lock().unwrap() += 1;
}
#[inline(never)]
pub fn st(m: &std::sync::Mutex<u64>) {
    *m.lock().unwrap() += 1;
}
fn main() {
    let a = syncprof::Mutex::new(0);
    let b = std::sync::Mutex::new(0);
    sp(&a);
    st(&b);
}
