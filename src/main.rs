fn main() {
    println!("crosswheel");
}
