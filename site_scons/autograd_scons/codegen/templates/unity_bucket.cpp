${banner}
// Unity bucket ${i} of ${n}: ${count} units.

${support}
