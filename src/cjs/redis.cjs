// `require("edge-offload/redis")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../store/redis.js", "edge-offload/redis");
