const c10::SymInt batch = ${batch};
