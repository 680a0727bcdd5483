// The flat index of this thread in a 2D grid of WG-wide workgroups (grids wider than 65535 groups wrap to y).
uint flat_index() {
  return (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y) * WG + gl_LocalInvocationID.x;
}
