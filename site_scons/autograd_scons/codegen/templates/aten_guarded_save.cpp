if (${guard}) {
  ${save}
}
