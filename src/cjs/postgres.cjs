// `require("edge-offload/postgres")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../store/postgres.js", "edge-offload/postgres");
