if (${cond}) {
  original_self = self.clone();
}
