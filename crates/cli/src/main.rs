fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__sandbox-init") {
        cleanroom_backend::linux::init::main(args.get(2).map(String::as_str).unwrap_or(""));
    }
}
