namespace ddp::launch {}
