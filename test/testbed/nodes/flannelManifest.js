// The official Flannel manifest (test/fixtures/nodes/kube-flannel.yml) for the node lab: its images are the ones
// images.sh builds (never pulled), its Network is the cluster's pod subnet, and it programs nftables as kube-proxy
// does there. Edited through the yaml library; everything else stays as upstream wrote it.
// Usage: node flannelManifest.js SOURCE OUT FLANNEL_VERSION FLANNEL_CNI_VERSION POD_SUBNET
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require(require.resolve("yaml", { paths: [path.join(__dirname, "..", "..", "..")] }));

const [source, out, flannelVersion, cniVersion, podSubnet] = process.argv.slice(2);
const docs = YAML.parseAllDocuments(fs.readFileSync(source, "utf8"));
let configured = false;
let imagesSet = 0;
for (const doc of docs) {
  const kind = doc.get("kind");
  if (kind === "ConfigMap" && doc.getIn(["metadata", "name"]) === "kube-flannel-cfg") {
    const netConf = JSON.parse(doc.getIn(["data", "net-conf.json"]));
    netConf.Network = podSubnet;
    netConf.EnableNFTables = true;
    doc.setIn(["data", "net-conf.json"], `${JSON.stringify(netConf, null, 2)}\n`);
    configured = true;
  }
  if (kind === "DaemonSet") {
    for (const list of ["initContainers", "containers"]) {
      for (const container of doc.getIn(["spec", "template", "spec", list]).items) {
        const image = container.get("image");
        container.set("image", image.includes("flannel-cni-plugin") ? `ghcr.io/flannel-io/flannel-cni-plugin:v${cniVersion}` : `ghcr.io/flannel-io/flannel:v${flannelVersion}`);
        container.set("imagePullPolicy", "Never");
        imagesSet++;
      }
    }
  }
}
if (!configured || imagesSet === 0) throw new Error(`${source}: no kube-flannel-cfg ConfigMap or no DaemonSet containers found`);
fs.writeFileSync(out, docs.map((doc) => doc.toString()).join("---\n"));
