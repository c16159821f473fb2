{${offset}, ${size}, ${alias}},  // ${qualified}
