${banner}
// Edit TU ${j}: ${count} units out of their buckets while edited.

${members}
