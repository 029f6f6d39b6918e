// RUN: spmd-opt --help | FileCheck %s

// The driver registers the spmd dialect beside the dialects of the programs
// it compiles, and the generic transforms.
// CHECK: Available Dialects: {{.*}}linalg{{.*}}spmd{{.*}}tensor
// CHECK: --canonicalize
// CHECK: --cse
