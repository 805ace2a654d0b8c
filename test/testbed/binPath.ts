// Loaded by mocha before any test (.mocharc.integration.json): the test bed's etcd tools (etcdctl, etcdutl) and
// kubectl of the chosen version come first on PATH, for the tests and every child they start, as on a user's node.
import * as path from "path";
import { cachedEtcdBinDir, cachedKubeBinDir } from "./kubeBinaries";

const dirs = [cachedEtcdBinDir(), cachedKubeBinDir()];
process.env.PATH = [...dirs, ...(process.env.PATH ?? "").split(path.delimiter)].join(path.delimiter);
