void will_release_variables() override {
  retain_variables = false;
}
